// File: chunked_copy.h
// Copies a tensor read from a checkpoint (often a view of a mapped file) into
// owned memory of the resident dtype and device, a bounded chunk at a time,
// so a load's peak stays near what it keeps: each chunk of stored bytes is
// seen (hashed), converted, then handed back (its mapped pages released)
// before the next is touched. Loading a bf16 target as fp32 then peaks at
// the fp32 bytes plus one chunk, not plus the whole bf16 tensor.
//
//   ChunkedCopyOptions o{at::kFloat, c10::Device(c10::kCPU)};
//   ASSIGN_OR_RETURN(at::Tensor w, ChunkedCopy(stored, o,
//       [&](const void* p, int64_t off, int64_t n) { hasher.Update(p, n); },
//       [&](int64_t off, int64_t n) { source.ReleaseRange(name, off, n); }));
#pragma once

#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"

namespace dflash::weights {

struct ChunkedCopyOptions {
  c10::ScalarType dtype;
  c10::Device device = c10::Device(c10::kCPU);
  // Stored bytes per chunk; rounded down to a multiple of 64 bytes and of
  // the element size (ByteHasher's rule), at least one element.
  int64_t chunk_bytes = int64_t{16} << 20;
};

// Each chunk of the source's bytes, in order, before it is converted:
// (data, byte offset in the tensor, byte count). May be empty.
using ChunkVisitor = std::function<void(const void*, int64_t, int64_t)>;
// A chunk has been converted and will not be read again: (offset, count).
using ChunkRelease = std::function<void(int64_t, int64_t)>;

// `src` must be a contiguous CPU tensor. Returns a new tensor (never a view
// of `src`) of src's shape in options.dtype on options.device. The convert
// of each chunk runs on ATen's intra-op threads (the server's --threads).
// Torch errors come back as a Status (TorchGuard), naming `what`.
absl::StatusOr<at::Tensor> ChunkedCopy(const at::Tensor& src, const ChunkedCopyOptions& options,
                                       const ChunkVisitor& visit, const ChunkRelease& release);

}  // namespace dflash::weights
