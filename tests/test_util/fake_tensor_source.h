// File: fake_tensor_source.h
// An in-memory TensorSource (format "fake") for tests: name -> at::Tensor in
// insertion order, optional skipped entries, and a log of the names Read().
// Header-only on purpose: dflash_test_util is built without torch, so this
// compiles into the test binaries that include it (they link dflash_weights).
//
//   FakeTensorSource src({{"fc.weight", at::randn({8, 32})}});
//   ASSIGN_OR_RETURN(WeightReport r, ValidateWeightMap(src, schema, {}));
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "weights/name_suggest.h"
#include "weights/tensor_source.h"

namespace dflash::testing {

inline formats::DType FakeDTypeOf(c10::ScalarType t) {
  switch (t) {
    case c10::kDouble: return formats::DType::kF64;
    case c10::kFloat: return formats::DType::kF32;
    case c10::kHalf: return formats::DType::kF16;
    case c10::kBFloat16: return formats::DType::kBF16;
    case c10::kLong: return formats::DType::kI64;
    case c10::kInt: return formats::DType::kI32;
    case c10::kShort: return formats::DType::kI16;
    case c10::kChar: return formats::DType::kI8;
    case c10::kByte: return formats::DType::kU8;
    case c10::kBool: return formats::DType::kBool;
    default: return formats::DType::kF32;
  }
}

class FakeTensorSource : public weights::TensorSource {
 public:
  explicit FakeTensorSource(std::vector<std::pair<std::string, at::Tensor>> tensors,
                            std::vector<std::string> skipped = {},
                            std::string path = "fake://checkpoint")
      : skipped_(std::move(skipped)), path_(std::move(path)) {
    for (auto& [name, t] : tensors) Add(name, t);
  }

  void Add(const std::string& name, const at::Tensor& t) {
    weights::TensorInfo info;
    info.name = name;
    info.dtype = FakeDTypeOf(t.scalar_type());
    info.shape.assign(t.sizes().begin(), t.sizes().end());
    info.file = path_ + "/" + name;
    info.nbytes = static_cast<int64_t>(t.numel() * t.element_size());
    infos_.push_back(std::move(info));
    values_.push_back(t.contiguous().clone());
  }

  std::string format() const override { return "fake"; }
  std::string path() const override { return path_; }
  const std::vector<weights::TensorInfo>& tensors() const override { return infos_; }
  std::vector<std::string> skipped_entries() const override { return skipped_; }

  absl::StatusOr<at::Tensor> Read(absl::string_view name) const override {
    reads_.emplace_back(name);
    for (size_t i = 0; i < infos_.size(); ++i) {
      if (infos_[i].name == name) return values_[i].clone();
    }
    return absl::NotFoundError(absl::StrCat(
        "no tensor '", name, "' in '", path_,
        "'; nearest present: ", weights::QuoteList(weights::NearestNames(name, names()))));
  }

  // Every name passed to Read(), in order.
  const std::vector<std::string>& reads() const { return reads_; }

 private:
  std::vector<weights::TensorInfo> infos_;
  std::vector<at::Tensor> values_;
  std::vector<std::string> skipped_;
  std::string path_;
  mutable std::vector<std::string> reads_;
};

}  // namespace dflash::testing
