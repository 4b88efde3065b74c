#include "weights/chunked_copy.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/torch_guard.h"

namespace dflash::weights {
namespace {

// Asks for transparent huge pages behind a fresh CPU destination before its
// first write: the load's cost is mostly faulting in fresh memory (one fault
// and one 4 KiB zeroing per page; ~90 MB/s-1.9 GB/s on the shared VM), and a
// 2 MiB page takes one fault. Best effort (THP "never", or madvise refused:
// nothing changes). DFLASH_LOAD_HUGEPAGES=0 turns it off, to measure.
void AdviseHugePages(void* data, int64_t nbytes) {
  static const bool enabled = [] {
    const char* v = std::getenv("DFLASH_LOAD_HUGEPAGES");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  if (!enabled || nbytes < (int64_t{4} << 20)) return;
#ifdef MADV_HUGEPAGE
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + nbytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace

absl::StatusOr<at::Tensor> ChunkedCopy(const at::Tensor& src, const ChunkedCopyOptions& options,
                                       const ChunkVisitor& visit, const ChunkRelease& release) {
  if (!src.is_contiguous() || !src.device().is_cpu()) {
    return absl::InternalError("ChunkedCopy: the source must be a contiguous CPU tensor");
  }
  absl::StatusOr<at::Tensor> copied = TorchGuard("converting", [&]() -> at::Tensor {
    at::Tensor out =
        at::empty(src.sizes(), at::TensorOptions().dtype(options.dtype).device(options.device));
    if (out.device().is_cpu()) AdviseHugePages(out.data_ptr(), out.nbytes());
    const int64_t numel = src.numel();
    const int64_t elem = static_cast<int64_t>(src.element_size());
    // A chunk is a multiple of 64 bytes (whole ByteHasher steps) and of elem.
    const int64_t step = std::max<int64_t>(elem, 64);
    const int64_t chunk_elems =
        std::max<int64_t>(1, std::max(step, options.chunk_bytes / step * step) / elem);
    const at::Tensor in_flat = src.view({numel});
    at::Tensor out_flat = out.view({numel});
    const char* bytes = static_cast<const char*>(src.data_ptr());
    for (int64_t begin = 0; begin < numel; begin += chunk_elems) {
      const int64_t n = std::min(chunk_elems, numel - begin);
      if (visit) visit(bytes + begin * elem, begin * elem, n * elem);
      // copy_ converts on the intra-op pool (TensorIterator splits it).
      out_flat.slice(0, begin, begin + n).copy_(in_flat.slice(0, begin, begin + n));
      if (release) release(begin * elem, n * elem);
    }
    if (numel == 0 && visit) visit(bytes, 0, 0);
    return out;
  });
  // Out of memory says how much this tensor needed where, so the caller can
  // weigh it against the device's free memory (info) and the budget.
  if (absl::IsResourceExhausted(copied.status())) {
    const int64_t need = src.numel() * static_cast<int64_t>(c10::elementSize(options.dtype));
    return absl::ResourceExhaustedError(
        absl::StrCat(copied.status().message(), " (needed ", need, " bytes for ", src.numel(), " ",
                     c10::toString(options.dtype), " elements on ", options.device.str(), ")"));
  }
  return copied;
}

}  // namespace dflash::weights
