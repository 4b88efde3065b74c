// File: openblas_runtime.h
// What this process's OpenBLAS runs with: its kernel family ("core") and its
// thread pool. Debian's libtorch multiplies through libblas.so.3; when that
// is OpenBLAS, its entry points are found at run time (dlsym), so nothing
// here links OpenBLAS and everything degrades to "not OpenBLAS".
#pragma once

#include <string>

namespace dflash::resident {

// The loaded OpenBLAS's core name ("Haswell", "SkylakeX"), or "" when
// libtorch's BLAS is not OpenBLAS. The core is chosen when the library
// loads, from OPENBLAS_CORETYPE or the CPU; the server never changes it (some
// machines pin it because older builds compute wrong results on them).
std::string OpenBlasCore();

// OpenBLAS's own thread pool size: libtorch's set_num_threads leaves it at
// OPENBLAS_NUM_THREADS or the core count, so --threads 1 would still
// multiply on every core. No-op without OpenBLAS.
void SetOpenBlasThreads(int threads);

}  // namespace dflash::resident
