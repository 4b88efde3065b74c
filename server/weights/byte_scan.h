// File: byte_scan.h
// One read of a tensor's stored bytes for both of a load's checks: each
// piece is tested for NaN/Inf and hashed into the fingerprint while it is
// in the CPU's cache, so a load reads its checkpoint's bytes once, not once
// per check (issue 28: checkpoint to result at page-cache speed).
#pragma once

#include <cstdint>

#include <c10/core/ScalarType.h>

#include "weights/fingerprint.h"

namespace dflash::weights {

// True when AllFiniteBytes has a bit test for `dtype` (tensor_stats.h);
// the others are checked with at::isfinite, in a pass of their own.
bool HasFiniteBitTest(c10::ScalarType dtype);

// Hashes `nbytes` at `data` into `hash` (ByteHasher's rule: a multiple of 64
// bytes unless these are the tensor's last) and, while `*finite` is true,
// tests the same bytes, as elements of `dtype` (HasFiniteBitTest), for
// NaN/Inf: the first piece that is not finite sets it false, and the rest
// of this call and of later calls for the tensor is only hashed.
void HashAndCheckFinite(const void* data, int64_t nbytes, c10::ScalarType dtype, ByteHasher& hash,
                        bool* finite);

}  // namespace dflash::weights
