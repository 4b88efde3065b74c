#include "resident/placement.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "resident/device.h"

namespace dflash::resident {
namespace fs = std::filesystem;

absl::StatusOr<c10::ScalarType> ParseDType(const std::string& dtype) {
  if (dtype == "fp32") return c10::kFloat;
  if (dtype == "bf16") return c10::kBFloat16;
  if (dtype == "fp16") return c10::kHalf;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", dtype, "' is not one of fp32, bf16, fp16"));
}

std::string DTypeLabel(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat: return "fp32";
    case c10::kBFloat16: return "bf16";
    case c10::kHalf: return "fp16";
    default: return c10::toString(type);
  }
}

absl::StatusOr<std::string> ResolveRequestDevice(const std::string& requested,
                                                 const std::string& fallback) {
  if (requested.empty()) return fallback;
  if (requested == "auto") {
    return absl::InvalidArgumentError("device 'auto' is for the server flag; give cpu or cuda:N");
  }
  auto choice = ResolveDevice(requested);
  if (absl::IsInvalidArgument(choice.status())) {
    // ResolveDevice speaks of the server's flag, which also takes 'auto'.
    return absl::InvalidArgumentError(
        absl::StrCat("device '", requested, "' is not one of cpu, cuda, cuda:N"));
  }
  if (!choice.ok()) return choice.status();
  return choice->device;
}

absl::StatusOr<Placement> ResolvePlacement(const std::string& device, const std::string& dtype,
                                           const std::string& server_device) {
  Placement p;
  auto resolved = ResolveRequestDevice(device, server_device);
  if (!resolved.ok()) return resolved.status();
  p.device = *resolved;
  p.dtype_name = dtype.empty() ? (p.device == "cpu" ? "fp32" : "bf16") : dtype;
  auto type = ParseDType(p.dtype_name);
  if (!type.ok()) return type.status();
  p.dtype = *type;
  return p;
}

std::string DiskSignature(const std::string& path) {
  std::string sig;
  auto add = [&sig](const fs::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      absl::StrAppend(&sig, p.string(), ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec, ";");
    }
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  } else {
    add(path);
  }
  return sig;
}

std::string DefaultName(const std::string& path) {
  fs::path p(path);
  while (!p.empty() && !p.has_filename()) p = p.parent_path();  // trailing '/'
  std::error_code ec;
  if (!fs::is_directory(p, ec)) {
    const std::string folder = p.parent_path().filename().string();
    return folder.empty() ? p.stem().string() : folder;
  }
  return p.filename().string();
}

int64_t NowUnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace dflash::resident
