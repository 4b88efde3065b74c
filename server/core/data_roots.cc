#include "core/data_roots.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dflash::core {
namespace fs = std::filesystem;

absl::StatusOr<DataRoots> DataRoots::Create(const std::vector<std::string>& roots) {
  if (roots.empty()) return absl::InvalidArgumentError("no data roots given");
  DataRoots out;
  for (const std::string& r : roots) {
    std::error_code ec;
    fs::create_directories(r, ec);
    fs::path canon = fs::canonical(r, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("data root '", r, "': ", ec.message()));
    }
    if (!fs::is_directory(canon)) {
      return absl::InvalidArgumentError(
          absl::StrCat("data root '", r, "' is not a directory"));
    }
    out.roots_.push_back(canon.string());
  }
  return out;
}

absl::StatusOr<std::string> DataRoots::Resolve(const std::string& path) const {
  if (path.empty()) return absl::InvalidArgumentError("path is empty");
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("path contains a NUL byte");
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
      absl::StrCat("path '", path, "' is outside the server's data roots"));
}

}  // namespace dflash::core
