#include "resident/openblas_runtime.h"

#include <dlfcn.h>

namespace dflash::resident {

std::string OpenBlasCore() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (fn == nullptr) return "";
  const char* name = fn();
  return name == nullptr ? "" : std::string(name);
}

void SetOpenBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn != nullptr && threads > 0) fn(threads);
}

}  // namespace dflash::resident
