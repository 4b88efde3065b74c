#include "core/acceptance_curves.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "eval/sampled_acceptance.h"
#include "types/proposal_policy.h"

namespace dflash::core {
namespace {

served::AcceptanceCurve Common(const types::JobRecord& job, const types::EvalResult& r) {
  served::AcceptanceCurve c;
  c.block_size = r.block_size;
  c.blocks = r.blocks;
  c.samples = r.samples;
  c.mode = r.mode == types::Mode::kAnchor ? "anchor" : "replay";
  c.semantics = r.semantics;
  c.family = r.family;
  c.job_id = job.id;
  c.dataset = job.request.params.dataset;
  c.drafter_fingerprint = r.drafter_fingerprint;
  c.dataset_fingerprint = r.dataset_fingerprint;
  return c;
}

served::AcceptanceCurve Greedy(const types::JobRecord& job, const types::EvalResult& r) {
  served::AcceptanceCurve c = Common(job, r);
  c.label = "greedy";
  c.policy = "greedy";
  const double blocks = static_cast<double>(r.blocks);
  double mean = 1;
  for (const types::PositionMetrics& p : r.positions) {
    c.marginal.push_back(r.blocks > 0 ? p.accepted / blocks : 0.0);
    mean += c.marginal.back();
  }
  for (int64_t h : r.accepted_histogram) c.histogram.push_back(r.blocks > 0 ? h / blocks : 0.0);
  // The engines' counters give 1 + accepted / drafts: the uncapped value.
  c.mean_accept_length = mean;
  c.mean_accept_length_per_request = r.tau;
  if (r.accept_length_ci)
    c.mean_accept_length_ci = served::Range{r.accept_length_ci->lo, r.accept_length_ci->hi};
  if (r.tau_ci) c.per_request_ci = served::Range{r.tau_ci->lo, r.tau_ci->hi};
  if (r.mode == types::Mode::kAnchor) {
    c.approximations.push_back("anchor mode: blocks at chosen anchors of the data, not a decode");
  } else if (mean != r.accept_length_pooled) {
    c.approximations.push_back(absl::StrCat(
        "replay: 1 + accepted/steps = ", mean, "; z-lab's loop records ", r.accept_length_pooled,
        " (the last step of a sample capped at the tokens left)"));
  }
  return c;
}

}  // namespace

absl::StatusOr<served::AcceptanceCurve> CurveFromJob(const types::JobRecord& job, int setting) {
  if (job.state != types::JobState::kSucceeded || !job.result) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.id, " is ", types::JobStateName(job.state), "; it needs a SUCCEEDED result"));
  }
  const types::EvalResult& r = *job.result;
  if (!r.suite_results.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job.id, " is a suite (", r.suite,
                                                      "); its top line is a macro average: "
                                                      "evaluate each dataset in its own job"));
  }
  const int n = static_cast<int>(r.sampling.size());
  if (setting < 0 || setting > n) {
    std::string known = "0 (greedy)";
    for (int i = 0; i < n; ++i) {
      absl::StrAppend(&known, ", ", i + 1, " (", eval::SamplingSettingText(r.sampling[i].setting),
                      ")");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("setting ", setting, ": job ", job.id, " has ", known));
  }
  if (setting == 0) return Greedy(job, r);
  const types::SampledAcceptance& s = r.sampling[setting - 1];
  if (s.marginal_accept.empty() && r.blocks > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id,
                     " was stored before marginal acceptance was kept; "
                     "resubmit it (dflash-eval resubmit ",
                     job.id, ")"));
  }
  served::AcceptanceCurve c = Common(job, r);
  c.label = eval::SamplingSettingText(s.setting);
  c.policy = types::PolicyName(s.setting.policy);
  c.engine = s.setting.engine;
  c.temperature = s.setting.temperature;
  c.top_p = s.setting.top_p;
  c.top_k = s.setting.top_k;
  c.marginal = s.marginal_accept;
  c.histogram = s.histogram;
  c.mean_accept_length = s.expected_accept_length_pooled;
  c.mean_accept_length_per_request = s.expected_tau;
  if (s.accept_length_ci) {
    c.mean_accept_length_ci = served::Range{s.accept_length_ci->lo, s.accept_length_ci->hi};
  }
  c.approximations = s.approximations;
  return c;
}

}  // namespace dflash::core
