#include "weights/weight_digest.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "weights/byte_scan.h"
#include "weights/chunked_copy.h"
#include "weights/tensor_stats.h"

namespace dflash::weights {

std::string StoredAs(const TensorEntry& e) {
  return e.stored_name == e.name ? std::string()
                                 : absl::StrCat(" (stored as '", e.stored_name, "')");
}

std::vector<TensorEntry*> FoundSorted(WeightReport& report) {
  std::vector<TensorEntry*> out;
  for (TensorEntry& e : report.tensors) {
    if (e.status == EntryStatus::kFound) out.push_back(&e);
  }
  std::sort(out.begin(), out.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->name < b->name; });
  return out;
}

absl::StatusOr<at::Tensor> ReadValidated(const TensorSource& source, const TensorEntry& e) {
  ASSIGN_OR_RETURN(at::Tensor t, source.Read(e.stored_name));
  ASSIGN_OR_RETURN(t, TorchGuard("reading", [&] { return t.cpu().contiguous(); }), "tensor '",
                   e.stored_name, "'");
  const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (shape != e.shape) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor '", e.stored_name, "' now has shape ", ShapeText(shape), "; it had ",
                     ShapeText(e.shape), " when validated (file changed?)"));
  }
  return t;
}

absl::StatusOr<at::Tensor> ReadAndDigest(const TensorSource& source, TensorEntry& e,
                                         DigestStats stats, Fingerprinter& fp) {
  ASSIGN_OR_RETURN(at::Tensor t, ReadValidated(source, e));
  if (stats == DigestStats::kCompute && !e.has_stats && !e.keep_dtype) {
    ASSIGN_OR_RETURN(e.stats, ComputeTensorStats(t), "tensor '", e.stored_name, "'");
    e.has_stats = true;
  }
  fp.AddTensor(e.name, e.dtype, e.shape, t.data_ptr(),
               static_cast<size_t>(t.numel() * t.element_size()));
  return t;
}

absl::StatusOr<at::Tensor> LoadAndDigest(const TensorSource& source, TensorEntry& e,
                                         c10::ScalarType dtype, c10::Device device,
                                         const MapPolicy& policy, MapTally& tally,
                                         Fingerprinter& fp, bool* not_finite) {
  ASSIGN_OR_RETURN(at::Tensor t, ReadValidated(source, e));
  // Both checks read each piece of the stored bytes while it is in cache
  // (byte_scan.h), a copied tensor's as they are converted.
  const bool check = !e.has_stats && !e.keep_dtype;
  const bool fused = check && HasFiniteBitTest(t.scalar_type());
  bool finite = true;
  ByteHasher hash = fp.BeginTensor(e.name, e.dtype, e.shape);
  auto scan = [&](const void* p, int64_t n) {
    if (fused) {
      HashAndCheckFinite(p, n, t.scalar_type(), hash, &finite);
    } else {
      hash.Update(p, static_cast<size_t>(n));
    }
  };
  // A tensor already in its resident dtype stays a view of its file when
  // the policy allows (map_policy.h says what keeps that safe); the rest
  // are copied in chunks, each chunk's mapped pages going back before the next.
  const c10::ScalarType want = e.keep_dtype ? t.scalar_type() : dtype;
  at::Tensor kept = t;
  std::optional<FileStamp> file = MayAlias(source, e.stored_name, t, want, device, policy);
  if (file) {
    scan(t.data_ptr(), static_cast<int64_t>(t.nbytes()));
    tally.AddMapped(*file, static_cast<int64_t>(t.nbytes()));
  } else {
    ASSIGN_OR_RETURN(
        kept,
        ChunkedCopy(
            t, ChunkedCopyOptions{want, device},
            [&](const void* p, int64_t, int64_t n) { scan(p, n); },
            [&](int64_t off, int64_t n) { source.ReleaseRange(e.stored_name, off, n); }),
        "tensor '", e.name, "'");
    tally.AddCopied(static_cast<int64_t>(kept.nbytes()));
  }
  fp.EndTensor(hash);
  if (check && !fused) {
    ASSIGN_OR_RETURN(finite, AllFinite(t), "tensor '", e.stored_name, "'");
  }
  if (!finite) {  // the stored values (a view of the file again if copied)
    ASSIGN_OR_RETURN(e.stats, ComputeTensorStats(t), "tensor '", e.stored_name, "'");
    e.has_stats = true;
    *not_finite = true;
  }
  if (!file) {
    t = at::Tensor();  // the copy is all we keep: let the file's pages go
    source.ReleaseBytes(e.stored_name);
  }
  return kept;
}

void ReportStats(WeightReport& report, const std::vector<TensorEntry*>& entries,
                 std::vector<std::string>* bad_values) {
  for (const TensorEntry* entry : entries) {
    const TensorEntry& e = *entry;
    if (!e.has_stats) continue;
    if (e.stats.nan_count + e.stats.inf_count > 0) {
      bad_values->push_back(absl::StrCat("tensor '", e.name, "'", StoredAs(e), " holds ",
                                         e.stats.nan_count, " NaN and ", e.stats.inf_count,
                                         " Inf values"));
    }
    if (e.stats.all_zero) {
      report.facts.push_back(
          absl::StrCat("warning: tensor '", e.name, "' is all zeros (untrained or zeroed?)"));
    }
  }
}

absl::Status ComputeStatsAndFingerprint(const TensorSource& source, int64_t max_tensor_bytes,
                                        WeightReport* report,
                                        std::vector<std::string>* bad_values) {
  Fingerprinter fp;
  const std::vector<TensorEntry*> found = FoundSorted(*report);
  for (TensorEntry* e : found) {
    const TensorInfo* info = source.Find(e->stored_name);
    if (max_tensor_bytes > 0 && info != nullptr && info->nbytes > max_tensor_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("tensor '", e->stored_name, "' in '", source.path(), "' is ", info->nbytes,
                       " bytes; reading it for statistics would exceed the resident budget of ",
                       max_tensor_bytes, " bytes"));
    }
    ASSIGN_OR_RETURN(at::Tensor t, ReadAndDigest(source, *e, DigestStats::kCompute, fp));
  }
  report->fingerprint = fp.Hex();
  ReportStats(*report, found, bad_values);
  return absl::OkStatus();
}

}  // namespace dflash::weights
