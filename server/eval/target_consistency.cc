#include "eval/target_consistency.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "eval/shard_plan.h"
#include "model/tensor_ops.h"

namespace dflash::eval {
namespace {

// Rows p of one sample whose next token is a response token, and that token.
void ResponseRows(const data::DatasetSample& s, std::vector<int64_t>* rows,
                  std::vector<int64_t>* next) {
  const at::Tensor ids = s.input_ids.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor mask = s.loss_mask.to(at::kCPU, at::kByte).contiguous();
  const int64_t L = ids.numel();
  const int64_t* t = ids.data_ptr<int64_t>();
  const uint8_t* m = mask.data_ptr<uint8_t>();
  for (int64_t p = 0; p + 1 < L; ++p) {
    if (!m[p + 1]) continue;
    rows->push_back(p);
    next->push_back(t[p + 1]);
  }
}

}  // namespace

absl::Status CheckTargetDistributionInputs(const weights::TargetTensors& target,
                                           const data::EvalDataset& dataset) {
  if (!dataset.final_hidden().has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dataset '", dataset.name(),
        "' holds no final hidden state of the target; the target's distribution needs one: "
        "declare it in dataset.json, e.g. \"final_hidden_state\": {\"key\": \"hidden_state\", "
        "\"norm_applied\": false}"));
  }
  if (dataset.hidden_size() != target.hidden_size) {
    return absl::FailedPreconditionError(absl::StrCat("dataset '", dataset.name(),
                                                      "' has hidden size ", dataset.hidden_size(),
                                                      "; the target's is ", target.hidden_size));
  }
  if (!dataset.final_hidden()->norm_applied && !target.norm.defined()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dataset '", dataset.name(), "' holds the final hidden state before the final norm ('",
        dataset.final_hidden()->key,
        "', norm_applied false) but the target's final norm is not resident; load the target "
        "with its final norm (load-target --final-norm)"));
  }
  return absl::OkStatus();
}

at::Tensor TargetLogits(const weights::TargetTensors& target, const at::Tensor& h,
                        bool norm_applied) {
  at::Tensor x = h.to(target.lm_head.scalar_type());
  if (!norm_applied) x = model::RmsNorm(x, target.norm, target.norm_eps);
  return at::mm(x, target.lm_head.t()).to(at::kFloat);  // [n, V]
}

absl::StatusOr<types::TargetConsistency> ComputeTargetConsistency(
    const weights::TargetTensors& target, const data::EvalDataset& dataset,
    int64_t max_logit_elements) {
  RETURN_IF_ERROR(CheckTargetDistributionInputs(target, dataset));
  types::TargetConsistency out;
  out.norm_applied = dataset.final_hidden()->norm_applied;
  const int64_t slice =
      std::max<int64_t>(1, max_logit_elements / std::max<int64_t>(1, target.vocab_size));
  // A streamed dataset is read in chunks within its budget (issue 30).
  if (dataset.streamed()) {
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < dataset.size(); ++i) bytes.push_back(dataset.sample_bytes(i));
    for (const SampleRange& r : SplitUnderCap(bytes, dataset.stream_budget_bytes())) {
      ASSIGN_OR_RETURN(data::EvalDataset part,
                       dataset.Part(r.begin, r.end, target.lm_head.device()));
      ASSIGN_OR_RETURN(types::TargetConsistency c,
                       ComputeTargetConsistency(target, part, max_logit_elements));
      out.positions += c.positions;
      out.matches += c.matches;
    }
  }
  for (size_t i = 0; i < dataset.size() && !dataset.streamed(); ++i) {
    const data::DatasetSample& s = dataset.sample(i);
    ASSIGN_OR_RETURN(
        int64_t matches,
        TorchGuard("checking target consistency",
                   [&] {
                     std::vector<int64_t> rows, next;
                     ResponseRows(s, &rows, &next);
                     const int64_t n = static_cast<int64_t>(rows.size());
                     const c10::Device dev = s.final_hidden.device();
                     const at::Tensor idx = at::tensor(rows, at::kLong).to(dev);
                     const at::Tensor want = at::tensor(next, at::kLong).to(dev);
                     int64_t hits = 0;
                     for (int64_t r0 = 0; r0 < n; r0 += slice) {
                       const int64_t m = std::min(slice, n - r0);
                       const at::Tensor h = s.final_hidden.index_select(0, idx.narrow(0, r0, m));
                       const at::Tensor arg = TargetLogits(target, h, out.norm_applied).argmax(-1);
                       hits += arg.eq(want.narrow(0, r0, m)).sum().item<int64_t>();
                     }
                     out.positions += n;
                     return hits;
                   }),
        "sample ", s.index, " (", s.file, ")");
    out.matches += matches;
  }
  out.fraction =
      out.positions > 0 ? static_cast<double>(out.matches) / static_cast<double>(out.positions) : 0;
  return out;
}

absl::Status RequireTargetConsistency(const types::TargetConsistency& c, double min_fraction,
                                      const std::string& target_name,
                                      const std::string& dataset_name) {
  if (c.positions > 0 && c.fraction >= min_fraction) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "target '%s' reproduces dataset '%s' at %.1f%% of response positions (%d of %d); this "
      "evaluation needs the target's distribution and at least %.1f%%. Likely causes: the data "
      "was captured from another target; the target's tensors were found under the wrong naming "
      "family; the final hidden state was captured %s the final norm (the dataset says "
      "norm_applied %s); or the responses were sampled rather than greedy",
      target_name, dataset_name, 100.0 * c.fraction, c.matches, c.positions, 100.0 * min_fraction,
      c.norm_applied ? "before, not after," : "after, not before,",
      c.norm_applied ? "true" : "false"));
}

}  // namespace dflash::eval
