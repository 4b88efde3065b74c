#include "weights/tensor_source.h"

namespace dflash::weights {

const TensorInfo* TensorSource::Find(absl::string_view name) const {
  for (const TensorInfo& t : tensors()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> TensorSource::names() const {
  std::vector<std::string> out;
  out.reserve(tensors().size());
  for (const TensorInfo& t : tensors()) out.push_back(t.name);
  return out;
}

}  // namespace dflash::weights
