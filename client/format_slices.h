// File: format_slices.h
// A result's slices in words (docs/slices.md): accept length and tau per
// category, language, thinking, context bucket and repetition, with their
// intervals, and the loop shares.
#pragma once

#include <string>

#include "dflash/eval/v1/eval.pb.h"

namespace dflash::client {

// "" when the result has no slices.
std::string FormatSlices(const ::dflash::eval::v1::EvalResult& r);

}  // namespace dflash::client
