#include "weights/safetensors_file.h"

#include "weights/dtype_torch.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "formats/shard_index.h"
#include "weights/name_suggest.h"

namespace dflash::weights {
namespace {

namespace fs = std::filesystem;

// Tensors read from a mapped file hold a shared_ptr to it, so the mapping
// outlives the TensorSource for as long as they live.
struct OpenedFile {
  std::shared_ptr<MappedFile> map;
  formats::SafetensorsLayout layout;
};

absl::StatusOr<OpenedFile> OpenMapped(const std::string& path) {
  OpenedFile out;
  ASSIGN_OR_RETURN(out.map, MappedFile::Open(path));
  ASSIGN_OR_RETURN(out.layout, formats::ParseSafetensorsBytes(out.map->bytes()), "'", path, "'");
  return out;
}

// One readable tensor: its file, where the data section starts, its entry.
struct Slot {
  std::shared_ptr<MappedFile> file;
  uint64_t data_start = 0;
  formats::SafetensorsEntry entry;
};

absl::StatusOr<at::Tensor> ReadSlot(const Slot& slot) {
  const formats::SafetensorsEntry& e = slot.entry;
  const uint64_t offset = slot.data_start + e.begin;
  const char* src = slot.file->bytes().data() + offset;
  if (e.dtype == formats::DType::kBool) {
    // Any byte but 0 or 1 is undefined behaviour for a torch bool.
    for (uint64_t i = 0; i < e.nbytes(); ++i) {
      if (static_cast<unsigned char>(src[i]) > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", slot.file->path(), "': tensor '", e.name, "': BOOL element ", i, " is byte ",
            static_cast<int>(static_cast<unsigned char>(src[i])), "; expected 0 or 1"));
      }
    }
  }
  return TorchGuard(absl::StrCat("reading tensor '", e.name, "'"), [&]() -> at::Tensor {
    auto options = at::TensorOptions().dtype(ToScalarType(e.dtype)).device(at::kCPU);
    if (e.nbytes() == 0) return at::empty(e.shape, options);
    if (offset % static_cast<uint64_t>(formats::DTypeSize(e.dtype)) != 0) {
      // Misaligned for its element type: kernels may not read it in place.
      at::Tensor t = at::empty(e.shape, options);
      std::memcpy(t.data_ptr(), src, e.nbytes());
      return t;
    }
    std::shared_ptr<MappedFile> keep = slot.file;
    return at::from_blob(
        const_cast<char*>(src), e.shape, [keep](void*) {}, options);
  });
}

// Both readers: a list of slots by name, in the order they were added.
class MappedSource final : public TensorSource {
 public:
  MappedSource(std::string format, std::string path)
      : format_(std::move(format)), path_(std::move(path)) {}

  void Add(const std::shared_ptr<MappedFile>& file, uint64_t data_start,
           formats::SafetensorsEntry entry) {
    TensorInfo info;
    info.name = entry.name;
    info.dtype = entry.dtype;
    info.shape = entry.shape;
    info.file = file->path();
    info.nbytes = static_cast<int64_t>(entry.nbytes());
    by_name_.emplace(info.name, infos_.size());
    infos_.push_back(std::move(info));
    slots_.push_back(Slot{file, data_start, std::move(entry)});
  }
  // Sharded, opened for a subset: tensors the index places in shards that
  // were not opened, and every name the index holds (for suggestions).
  void SetIndexNames(std::map<std::string, std::string> unopened,
                     std::vector<std::string> all_names) {
    unopened_ = std::move(unopened);
    all_names_ = std::move(all_names);
  }

  std::string format() const override { return format_; }
  std::string path() const override { return path_; }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }

  void ReleaseBytes(absl::string_view name) const override {
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end()) return;
    const Slot& slot = slots_[it->second];
    slot.file->ReleasePages(slot.data_start + slot.entry.begin, slot.entry.nbytes());
  }
  void ReleaseRange(absl::string_view name, int64_t offset, int64_t length) const override {
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end() || offset < 0 || length <= 0) return;
    const Slot& slot = slots_[it->second];
    const uint64_t end = std::min<uint64_t>(slot.entry.nbytes(), offset + length);
    if (static_cast<uint64_t>(offset) >= end) return;
    slot.file->ReleasePages(slot.data_start + slot.entry.begin + offset, end - offset);
  }

  // ReadSlot's view: data, aligned for its element type.
  std::optional<FileStamp> MappedStamp(absl::string_view name) const override {
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end()) return std::nullopt;
    const Slot& slot = slots_[it->second];
    const uint64_t offset = slot.data_start + slot.entry.begin;
    if (slot.entry.nbytes() == 0 ||
        offset % static_cast<uint64_t>(formats::DTypeSize(slot.entry.dtype)) != 0) {
      return std::nullopt;
    }
    return slot.file->stamp();
  }

  absl::StatusOr<at::Tensor> Read(absl::string_view name) const override {
    auto it = by_name_.find(std::string(name));
    if (it != by_name_.end()) return ReadSlot(slots_[it->second]);
    auto un = unopened_.find(std::string(name));
    if (un != unopened_.end()) {
      return absl::NotFoundError(
          absl::StrCat("tensor '", name, "' is in shard '", un->second, "' of '", path_,
                       "', which was not opened (the source was opened for other names)"));
    }
    return absl::NotFoundError(absl::StrCat(
        "no tensor '", name, "' in '", path_,
        "'; nearest: ", QuoteList(NearestNames(name, all_names_.empty() ? names() : all_names_))));
  }

 private:
  std::string format_, path_;
  std::vector<TensorInfo> infos_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, size_t> by_name_;
  std::map<std::string, std::string> unopened_;
  std::vector<std::string> all_names_;
};

// The index file, read whole (it is small: one line per tensor).
absl::StatusOr<formats::ShardIndex> ReadIndex(const std::string& index_path) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(index_path));
  if (file->size() > formats::kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("'", index_path, "': index is ", file->size(),
                                                   " bytes; the limit is ",
                                                   formats::kMaxSafetensorsHeaderBytes));
  }
  return formats::ParseShardIndex(file->bytes(), index_path);
}

}  // namespace

absl::StatusOr<TensorSourcePtr> OpenSafetensors(const std::string& path) {
  ASSIGN_OR_RETURN(OpenedFile opened, OpenMapped(path));
  auto source = std::make_unique<MappedSource>("safetensors", path);
  for (formats::SafetensorsEntry& e : opened.layout.entries) {
    source->Add(opened.map, opened.layout.data_start, std::move(e));
  }
  return TensorSourcePtr(std::move(source));
}

absl::StatusOr<TensorSourcePtr> OpenShardedSafetensors(const std::string& index_path,
                                                       const std::vector<std::string>& names) {
  ASSIGN_OR_RETURN(formats::ShardIndex index, ReadIndex(index_path));
  const std::map<std::string, std::vector<std::string>>& by_shard = index.by_shard;
  const std::map<std::string, std::string>& shard_of = index.shard_of;
  std::vector<std::string>& all_names = index.all_names;

  std::map<std::string, bool> wanted;  // shard -> open it
  for (const auto& [shard, tensors] : by_shard) wanted[shard] = names.empty();
  for (const std::string& n : names) {
    auto it = shard_of.find(n);
    if (it != shard_of.end()) wanted[it->second] = true;
  }

  const fs::path dir = fs::path(index_path).parent_path();
  auto source = std::make_unique<MappedSource>("safetensors-sharded", index_path);
  std::map<std::string, std::string> unopened;
  for (const auto& [shard, tensors] : by_shard) {
    if (!wanted[shard]) {
      for (const std::string& t : tensors) unopened.emplace(t, shard);
      continue;
    }
    const std::string shard_path = (dir / shard).string();
    absl::StatusOr<OpenedFile> opened = OpenMapped(shard_path);
    if (absl::IsNotFound(opened.status())) {
      return absl::NotFoundError(absl::StrCat("'", index_path, "': shard '", shard,
                                              "' (holding tensor '", tensors.front(),
                                              "') is missing: ", opened.status().message()));
    }
    if (!opened.ok()) return opened.status();

    std::unordered_map<std::string, size_t> in_shard;
    std::vector<std::string> shard_names;
    for (size_t i = 0; i < opened->layout.entries.size(); ++i) {
      in_shard.emplace(opened->layout.entries[i].name, i);
      shard_names.push_back(opened->layout.entries[i].name);
    }
    for (const std::string& t : tensors) {
      if (in_shard.count(t) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", index_path, "' maps tensor '", t, "' to shard '", shard,
            "', whose header lacks it; nearest there: ", QuoteList(NearestNames(t, shard_names))));
      }
    }
    // File order within the shard; tensors the index does not name are left out.
    for (formats::SafetensorsEntry& e : opened->layout.entries) {
      auto it = shard_of.find(e.name);
      if (it != shard_of.end() && it->second == shard) {
        source->Add(opened->map, opened->layout.data_start, std::move(e));
      }
    }
  }
  source->SetIndexNames(std::move(unopened), std::move(all_names));
  return TensorSourcePtr(std::move(source));
}

}  // namespace dflash::weights
