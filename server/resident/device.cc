#include "resident/device.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>  // TORCH_VERSION_{MAJOR,MINOR,PATCH}

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "resident/openblas_runtime.h"

#ifdef DFLASH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace dflash::resident {

bool CudaAvailable() {
  try {
    return at::detail::getCUDAHooks().hasCUDA() && at::detail::getCUDAHooks().getNumGPUs() > 0;
  } catch (...) {
    return false;
  }
}

static int NumGpus() {
  return CudaAvailable() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
}

absl::StatusOr<DeviceChoice> ResolveDevice(const std::string& flag) {
  if (flag == "cpu") return DeviceChoice{"cpu", "cpu requested"};
  const int gpus = NumGpus();
  if (flag == "auto") {
    if (gpus > 0)
      return DeviceChoice{"cuda:0", absl::StrCat(gpus, " CUDA device(s) visible; using cuda:0")};
    return DeviceChoice{"cpu", "no CUDA device visible to libtorch; falling back to cpu"};
  }
  int index = 0;
  if (flag != "cuda") {
    if (!absl::StartsWith(flag, "cuda:") || !absl::SimpleAtoi(flag.substr(5), &index) ||
        index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--device '", flag, "' is not one of auto, cpu, cuda, cuda:N"));
    }
  }
  if (gpus == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", flag, ": CUDA is not available (libtorch ", LibtorchVersion(), " sees no GPU",
        at::detail::getCUDAHooks().hasCUDA() ? "" : "; this libtorch is built without CUDA",
        "); use --device cpu or --device auto"));
  }
  if (index >= gpus) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device ", flag, ": only ", gpus,
                     " CUDA device(s) visible (cuda:0..cuda:", gpus - 1, ")"));
  }
  return DeviceChoice{absl::StrCat("cuda:", index), "requested"};
}

absl::StatusOr<std::vector<DeviceChoice>> ResolveDevices(const std::string& flag) {
  std::vector<DeviceChoice> out;
  if (flag == "auto" && NumGpus() > 1) {
    for (int i = 0; i < NumGpus(); ++i) {
      out.push_back({absl::StrCat("cuda:", i), absl::StrCat(NumGpus(), " CUDA devices visible")});
    }
    return out;
  }
  std::set<std::string> seen;
  for (absl::string_view entry : absl::StrSplit(flag, ',')) {
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--device '", flag,
                       "' has an empty entry; list devices as cpu,cpu or "
                       "cuda:0,cuda:1"));
    }
    absl::StatusOr<DeviceChoice> d = ResolveDevice(std::string(entry));
    if (!d.ok()) return d.status();
    if (d->device != "cpu" && !seen.insert(d->device).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--device '", flag, "' names ", d->device, " twice"));
    }
    out.push_back(*std::move(d));
  }
  return out;
}

std::vector<DeviceInfo> ListDevices(int intra_op_threads) {
  std::vector<DeviceInfo> out;
  DeviceInfo cpu;
  cpu.name = "cpu";
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu.description = absl::StrCat(cores, " cores, ", intra_op_threads, " intra-op threads");
  cpu.total_memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  out.push_back(cpu);
#ifdef DFLASH_WITH_CUDA
  for (int i = 0; i < NumGpus(); ++i) {
    DeviceInfo d;
    d.name = absl::StrCat("cuda:", i);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      d.description = prop.name;
      d.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    }
    const CudaAllocatorStats a = CudaAllocatorStatsFor(i);
    d.allocator_allocated_bytes = a.allocated_bytes;
    d.allocator_reserved_bytes = a.reserved_bytes;
    d.allocator_peak_allocated_bytes = a.peak_allocated_bytes;
    d.allocator_peak_reserved_bytes = a.peak_reserved_bytes;
    d.allocator_alloc_retries = a.alloc_retries;
    d.allocator_ooms = a.ooms;
    out.push_back(d);
  }
#else
  for (int i = 0; i < NumGpus(); ++i) {
    out.push_back(DeviceInfo{absl::StrCat("cuda:", i), "CUDA device", 0, 0});
  }
#endif
  return out;
}

CudaAllocatorStats CudaAllocatorStatsFor(int device_index) {
  CudaAllocatorStats out;
#ifdef DFLASH_WITH_CUDA
  if (device_index < 0 || device_index >= NumGpus()) return out;
  try {
    // Index 0 of each stat array is the aggregate over pools (StatType::
    // AGGREGATE in 1.13 and 2.x alike; its namespace moved in 2.5).
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        static_cast<c10::DeviceIndex>(device_index));
    out.allocated_bytes = stats.allocated_bytes[0].current;
    out.reserved_bytes = stats.reserved_bytes[0].current;
    out.peak_allocated_bytes = stats.allocated_bytes[0].peak;
    out.peak_reserved_bytes = stats.reserved_bytes[0].peak;
    out.alloc_retries = stats.num_alloc_retries;
    out.ooms = stats.num_ooms;
  } catch (...) {
    // The allocator not initialised on that device yet: nothing held there.
  }
#else
  (void)device_index;
#endif
  return out;
}

int64_t CudaReservedBytes() {
  int64_t total = 0;
  for (int i = 0; i < NumGpus(); ++i) total += CudaAllocatorStatsFor(i).reserved_bytes;
  return total;
}

std::string DescribeBlas() {
  // Debian's libtorch links libblas.so.3, which the alternatives system points
  // at the reference BLAS, OpenBLAS or BLIS: the mapped file tells which.
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> libs;
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (absl::StrContains(path, "blas") || absl::StrContains(path, "blis") ||
        absl::StrContains(path, "mkl")) {
      libs.insert(path);
    }
  }
  if (libs.empty()) return "unknown (no BLAS library mapped)";
  std::string kind = "reference BLAS (slow: install libopenblas0-pthread)";
  for (const std::string& p : libs) {
    if (absl::StrContains(p, "openblas"))
      kind = "OpenBLAS";
    else if (absl::StrContains(p, "blis"))
      kind = "BLIS";
    else if (absl::StrContains(p, "mkl"))
      kind = "MKL";
  }
  // Name the library libtorch links (libblas.so.3), not its helpers.
  std::string main_lib = *libs.begin();
  for (const std::string& p : libs) {
    if (absl::StrContains(p, "libblas.so")) main_lib = p;
  }
  if (const std::string core = OpenBlasCore(); !core.empty()) {
    const char* env = std::getenv("OPENBLAS_CORETYPE");
    return absl::StrCat(kind, " (", main_lib, "), core ", core,
                        env != nullptr && *env != '\0' ? " (OPENBLAS_CORETYPE)" : "");
  }
  return absl::StrCat(kind, " (", main_lib, ")");
}

std::string LibtorchVersion() {
  return absl::StrCat(TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH);
}

void SetIntraOpThreads(int threads) {
  at::set_num_threads(threads);
  SetOpenBlasThreads(threads);
}

}  // namespace dflash::resident
