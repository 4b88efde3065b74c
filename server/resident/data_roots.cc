#include "resident/data_roots.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dflash::resident {
namespace fs = std::filesystem;

absl::StatusOr<DataRoots> DataRoots::Create(const std::vector<std::string>& roots) {
  if (roots.empty()) return absl::InvalidArgumentError("no data roots given");
  DataRoots out;
  for (const std::string& r : roots) {
    std::error_code ec;
    fs::create_directories(r, ec);
    fs::path canon = fs::canonical(r, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("data root '", r, "': ", ec.message()));
    }
    if (!fs::is_directory(canon)) {
      return absl::InvalidArgumentError(absl::StrCat("data root '", r, "' is not a directory"));
    }
    out.roots_.push_back(canon.string());
  }
  return out;
}

absl::StatusOr<std::string> DataRoots::Resolve(const std::string& path, const char* field) const {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, " contains a NUL byte"));
  }
  if (path.size() > kMaxPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is ", path.size(), " bytes long; at most ", kMaxPathBytes, " are allowed"));
  }
  fs::path p(path);
  if (p.is_relative()) p = fs::path(roots_.front()) / p;
  // weakly_canonical resolves symlinks along the existing prefix and folds
  // '..' lexically after it, so a link pointing out of a root is caught.
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(p, ec);
  if (!ec) {
    const std::string s = resolved.string();
    for (const std::string& root : roots_) {
      if (s == root || absl::StartsWith(s, root + "/")) return s;
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat(field, " '", path, "' is outside the server's data roots"));
}

absl::Status DataRoots::CheckLinks(const std::string& resolved, int64_t max_entries) const {
  auto check = [&](const fs::path& p) -> absl::Status {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return absl::OkStatus();
    const std::string t = fs::weakly_canonical(p, ec).string();
    for (const std::string& root : roots_) {
      if (!ec && (t == root || absl::StartsWith(t, root + "/"))) return absl::OkStatus();
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "'", p.string(), "' is a symbolic link to a place outside the server's data roots"));
  };
  std::error_code ec;
  if (!fs::is_directory(resolved, ec)) {
    // A file (or nothing: the loader says NotFound): the config.json beside it.
    return check(fs::path(resolved).parent_path() / "config.json");
  }
  int64_t seen = 0;
  // Symlinked folders are checked as links, not walked into.
  for (fs::recursive_directory_iterator it(resolved, ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > max_entries) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "'", resolved, "' holds more than ", max_entries, " entries; refusing to read it"));
    }
    if (absl::Status st = check(it->path()); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace dflash::resident
