// File: device.h
// Resolving the --device flag and describing the machine's devices.
//   auto    -> cuda:0 when libtorch sees a GPU, else cpu (with a note saying so)
//   cpu     -> cpu
//   cuda    -> cuda:0; cuda:N -> that GPU; an error when CUDA is unavailable
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dflash::resident {

// One device as GetServerInfo reports it (core/server_info.h).
struct DeviceInfo {
  std::string name;         // "cpu", "cuda:0"
  std::string description;  // "NVIDIA H200", "x86_64, 2 threads"
  int64_t total_memory_bytes = 0;
  int64_t used_memory_bytes = 0;  // held by resident objects
  // CUDA devices only: the caching allocator's numbers (below), 0 elsewhere.
  int64_t allocator_allocated_bytes = 0, allocator_reserved_bytes = 0;
  int64_t allocator_peak_allocated_bytes = 0, allocator_peak_reserved_bytes = 0;
  int64_t allocator_alloc_retries = 0, allocator_ooms = 0;
};

struct DeviceChoice {
  std::string device;  // canonical: "cpu" or "cuda:N"
  std::string note;    // why, for the log ("no CUDA device visible; using cpu")
};

absl::StatusOr<DeviceChoice> ResolveDevice(const std::string& flag);

// A comma-separated --device list (issue 30): each entry as ResolveDevice
// reads it, in order; the first is where loads go, and an evaluation's
// shards run on every entry ("cpu,cpu": two CPU slots sharing the threads).
// A lone "auto" is every visible GPU, else cpu. InvalidArgument for an
// empty entry or a device named twice (other than cpu).
absl::StatusOr<std::vector<DeviceChoice>> ResolveDevices(const std::string& flag);

bool CudaAvailable();

// Every device libtorch can use, with total memory where known.
std::vector<DeviceInfo> ListDevices(int intra_op_threads);

// The CUDA caching allocator's counters for one device (libtorch's
// memory_stats(): the "all" pool's current and peak bytes). All 0 when this
// build has no CUDA or the device is not a GPU.
struct CudaAllocatorStats {
  int64_t allocated_bytes = 0, reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  int64_t alloc_retries = 0, ooms = 0;
};
CudaAllocatorStats CudaAllocatorStatsFor(int device_index);

// Bytes the caching allocator holds from the driver over every visible GPU
// (allocated tensors plus its cached free blocks): what the memory budget
// counts on CUDA (budget.h). 0 without CUDA.
int64_t CudaReservedBytes();

// The BLAS libtorch multiplies through, read from the libraries mapped into
// this process ("openblas-pthread (/usr/lib/.../libblas.so.3)").
std::string DescribeBlas();

// libtorch's intra-op thread count for this process (it starts at 1 on some
// machines). The server calls it once at startup, before any evaluation.
void SetIntraOpThreads(int threads);

// "1.13.1" etc.
std::string LibtorchVersion();

}  // namespace dflash::resident
