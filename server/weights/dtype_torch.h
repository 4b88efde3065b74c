// File: dtype_torch.h
// DType <-> libtorch scalar types, kept apart from dtype.h so the header
// parsers (and their fuzzers) stay torch-free.
#pragma once

#include <c10/core/ScalarType.h>

#include "formats/dtype.h"

namespace dflash::weights {

c10::ScalarType ToScalarType(formats::DType dtype);

}  // namespace dflash::weights
