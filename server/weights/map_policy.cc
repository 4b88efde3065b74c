#include "weights/map_policy.h"

#include <algorithm>

namespace dflash::weights {

std::optional<FileStamp> MayAlias(const TensorSource& source, absl::string_view name,
                                  const at::Tensor& t, c10::ScalarType dtype,
                                  const c10::Device& device, const MapPolicy& policy) {
  if (!policy.enabled || !device.is_cpu() || !t.defined() || t.scalar_type() != dtype ||
      !t.device().is_cpu() || !t.is_contiguous()) {
    return std::nullopt;
  }
  std::optional<FileStamp> stamp = source.MappedStamp(name);
  if (!stamp.has_value() || stamp->AgeSeconds() < policy.min_age_seconds) return std::nullopt;
  return stamp;
}

void MapTally::AddMapped(const FileStamp& file, int64_t nbytes) {
  mapped_bytes_ += nbytes;
  const bool seen = std::any_of(files_.begin(), files_.end(), [&](const FileStamp& f) {
    return f.dev == file.dev && f.ino == file.ino && f.path == file.path;
  });
  if (!seen) files_.push_back(file);
}

void MapTally::Merge(const MapTally& other) {
  copied_bytes_ += other.copied_bytes_;
  for (const FileStamp& f : other.files_) AddMapped(f, 0);
  mapped_bytes_ += other.mapped_bytes_;
}

absl::Status MapTally::CheckUnchanged() const {
  for (const FileStamp& f : files_) {
    if (absl::Status s = f.CheckUnchanged(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace dflash::weights
