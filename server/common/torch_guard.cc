#include "common/torch_guard.h"

#include <new>
#include <typeinfo>

namespace dflash {
namespace {

// c10::OutOfMemoryError (a CUDA caching-allocator or CPU allocation failure)
// by its type's name, so this file stays torch-free: common/ links no torch.
bool IsTorchOutOfMemory(const std::exception& e) {
  const std::string type = typeid(e).name();  // "N3c1016OutOfMemoryErrorE"
  return type.find("OutOfMemoryError") != std::string::npos;
}

}  // namespace

absl::Status StatusFromException(absl::string_view what_we_did, const std::exception& e) {
  std::string msg = e.what();
  // c10::Error messages carry a backtrace after the first line; keep line one.
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  // Out of memory (CUDA or host) fails the one request or job, never the
  // server: ResourceExhausted, which the service returns as such.
  const bool says_oom = msg.find("out of memory") != std::string::npos;
  if (says_oom || IsTorchOutOfMemory(e) || dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return absl::ResourceExhaustedError(
        says_oom ? absl::StrCat(what_we_did, ": ", msg)
                 : absl::StrCat(what_we_did, ": out of memory (", msg, ")"));
  }
  return absl::InternalError(absl::StrCat(what_we_did, ": ", msg));
}

}  // namespace dflash
