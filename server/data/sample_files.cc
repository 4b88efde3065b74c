// File: sample_files.cc
#include "data/sample_files.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <system_error>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dflash::data {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kExtensions[] = {".ckpt.gz", ".ckpt", ".pth", ".pt"};

absl::string_view StripExtension(absl::string_view name) {
  for (absl::string_view ext : kExtensions) {
    if (absl::EndsWith(name, ext)) return name.substr(0, name.size() - ext.size());
  }
  return name;
}

// Parses digits [begin, end); saturates instead of overflowing.
int64_t ParseDigits(absl::string_view s, size_t begin, size_t end) {
  int64_t v = 0;
  for (size_t i = begin; i < end; ++i) {
    if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) {
      return std::numeric_limits<int64_t>::max();
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

struct SortKey {
  std::vector<std::pair<int64_t, std::string>> folders;
  int64_t file_index;
  std::string file_name;
  bool operator<(const SortKey& o) const {
    return std::tie(folders, file_index, file_name) <
           std::tie(o.folders, o.file_index, o.file_name);
  }
};

}  // namespace

bool IsCaptureFileName(absl::string_view name) {
  if (name.empty() || name[0] == '.') return false;
  // vLLM / speculators per-sample captures (data/vllm_capture.h).
  if (absl::StartsWith(name, "hs_") && absl::EndsWith(name, ".safetensors")) return true;
  for (absl::string_view ext : kExtensions) {
    if (name.size() > ext.size() && absl::EndsWith(name, ext)) return true;
  }
  return false;
}

int64_t FileNameIndex(absl::string_view file_name) {
  absl::string_view stem = StripExtension(file_name);
  size_t end = stem.size();
  while (end > 0 && !absl::ascii_isdigit(stem[end - 1])) --end;
  if (end == 0) return -1;
  size_t begin = end;
  while (begin > 0 && absl::ascii_isdigit(stem[begin - 1])) --begin;
  return ParseDigits(stem, begin, end);
}

int64_t FolderIndex(absl::string_view folder_name) {
  size_t begin = 0;
  while (begin < folder_name.size() && !absl::ascii_isdigit(folder_name[begin])) ++begin;
  if (begin == folder_name.size()) return -1;
  size_t end = begin;
  while (end < folder_name.size() && absl::ascii_isdigit(folder_name[end])) ++end;
  return ParseDigits(folder_name, begin, end);
}

std::vector<SampleFile> OrderSampleFiles(const std::vector<std::string>& relative_paths) {
  std::vector<std::pair<SortKey, std::string>> keyed;
  std::set<int64_t> indices;
  bool all_distinct = true;
  for (const std::string& rel : relative_paths) {
    std::vector<absl::string_view> parts = absl::StrSplit(rel, '/');
    SortKey key;
    key.file_name = std::string(parts.back());
    key.file_index = FileNameIndex(parts.back());
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      key.folders.emplace_back(FolderIndex(parts[i]), std::string(parts[i]));
    }
    if (key.file_index < 0 || !indices.insert(key.file_index).second) all_distinct = false;
    keyed.emplace_back(std::move(key), rel);
  }
  if (all_distinct) {
    std::sort(keyed.begin(), keyed.end(),
              [](const auto& a, const auto& b) { return a.first.file_index < b.first.file_index; });
  } else {
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      return std::tie(a.first, a.second) < std::tie(b.first, b.second);
    });
  }
  std::vector<SampleFile> out;
  out.reserve(keyed.size());
  for (size_t i = 0; i < keyed.size(); ++i) {
    out.push_back(
        {keyed[i].second, all_distinct ? keyed[i].first.file_index : static_cast<int64_t>(i)});
  }
  return out;
}

absl::StatusOr<std::vector<SampleFile>> ListSampleFiles(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(
        absl::StrCat("dataset path '", root, "' is not an existing directory"));
  }
  std::vector<std::string> found;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || !IsCaptureFileName(name)) continue;
    found.push_back(fs::relative(it->path(), root, ec).generic_string());
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("listing dataset directory '", root, "': ", ec.message()));
  }
  return OrderSampleFiles(found);
}

}  // namespace dflash::data
