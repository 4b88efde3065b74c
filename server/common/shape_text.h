// File: shape_text.h
// The one way shapes are written in messages: "[64, 128]", "[]" for a
// scalar. Header-only and torch-free; takes any range of integers (a
// std::vector<int64_t>, an at::IntArrayRef, an absl::Span).
//
//   absl::StrCat("tensor 'w' has shape ", ShapeText(t.sizes()), ...)
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash {

template <typename Dims>
std::string ShapeText(const Dims& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

}  // namespace dflash
