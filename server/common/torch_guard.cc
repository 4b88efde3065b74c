#include "common/torch_guard.h"

namespace dflash {

absl::Status StatusFromException(absl::string_view what_we_did, const std::exception& e) {
  std::string msg = e.what();
  // c10::Error messages carry a backtrace after the first line; keep line one.
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  if (msg.find("out of memory") != std::string::npos ||
      msg.find("CUDA error: out of memory") != std::string::npos) {
    return absl::ResourceExhaustedError(absl::StrCat(what_we_did, ": ", msg));
  }
  return absl::InternalError(absl::StrCat(what_we_did, ": ", msg));
}

}  // namespace dflash
