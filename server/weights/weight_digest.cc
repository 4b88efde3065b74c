#include "weights/weight_digest.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
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

absl::StatusOr<at::Tensor> ReadAndDigest(const TensorSource& source, TensorEntry& e,
                                         DigestStats stats, Fingerprinter& fp) {
  ASSIGN_OR_RETURN(at::Tensor t, source.Read(e.stored_name));
  ASSIGN_OR_RETURN(t, TorchGuard("reading", [&] { return t.cpu().contiguous(); }), "tensor '",
                   e.stored_name, "'");
  const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (shape != e.shape) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor '", e.stored_name, "' now has shape ", ShapeText(shape), "; it had ",
                     ShapeText(e.shape), " when validated (file changed?)"));
  }
  if (stats == DigestStats::kCompute && !e.has_stats && !e.keep_dtype) {
    ASSIGN_OR_RETURN(e.stats, ComputeTensorStats(t), "tensor '", e.stored_name, "'");
    e.has_stats = true;
  }
  fp.AddTensor(e.name, e.dtype, e.shape, t.data_ptr(),
               static_cast<size_t>(t.numel() * t.element_size()));
  return t;
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
