#include "served/serving_profile.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace dflash::served {
namespace {

using nlohmann::ordered_json;

// Model-Optimizer rounds its rates to 6 places; so do we, so a profile
// written here and one written there compare as text.
double Round6(double v) {
  return std::round(v * 1e6) / 1e6;
}

ordered_json Rates(const std::vector<double>& v) {
  ordered_json a = ordered_json::array();
  for (double x : v) a.push_back(Round6(x));
  return a;
}

ordered_json CurveBody(const AcceptanceCurve& c) {
  ordered_json o;
  const std::vector<std::optional<double>> cond = ConditionalRates(c.marginal);
  ordered_json conditional = ordered_json::array();
  for (const std::optional<double>& x : cond) {
    // Unavailable (nothing reached the position) is null, never 0.
    conditional.push_back(x ? ordered_json(Round6(*x)) : ordered_json(nullptr));
  }
  o["conditional_accept_rates"] = conditional;
  o["marginal_accept_rates"] = Rates(c.marginal);
  o["mean_accept_length"] = Round6(c.mean_accept_length);
  o["mean_accept_length_per_request"] = Round6(c.mean_accept_length_per_request);
  // Keyed by tokens per step (the bonus counts: 1 = no draft accepted), as
  // Model-Optimizer's acceptance_length_histogram; ours holds fractions.
  ordered_json hist = ordered_json::object();
  for (size_t n = 0; n < c.histogram.size(); ++n) {
    hist[std::to_string(n + 1)] = Round6(c.histogram[n]);
  }
  o["acceptance_length_histogram"] = hist;
  return o;
}

ordered_json ModelOpt(const AcceptanceCurve& c) {
  const int64_t k = c.block_size - 1;
  ordered_json o;
  o["schema_version"] = "1.0";
  o["measured"] = true;
  o["method"] = "dflash";
  o["draft_checkpoint"] = c.drafter_fingerprint;
  o["target_model"] = nullptr;  // the target is not ours to name: the data's fingerprint is below
  o["num_speculative_tokens"] = k;
  o["block_size"] = c.block_size;
  o["max_supported_k"] = k;
  o["verification_method"] = "longest_prefix";
  ordered_json body = CurveBody(c);
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() == "acceptance_length_histogram") continue;
    o[it.key()] = it.value();
  }
  o["accept_length_model"] = "measured_per_k";
  o["accept_length_by_k"] = {{std::to_string(k), Round6(c.mean_accept_length)}};
  o["acceptance_length_histogram"] = body["acceptance_length_histogram"];
  if (c.per_category.empty()) {
    o["per_category"] = nullptr;
  } else {
    ordered_json cats = ordered_json::object();
    for (const auto& [name, sub] : c.per_category) cats[name] = CurveBody(sub);
    o["per_category"] = cats;
  }
  ordered_json cond;
  cond["dataset"] = c.dataset;
  cond["dataset_fingerprint"] = c.dataset_fingerprint;
  cond["num_samples"] = c.samples;
  cond["num_steps"] = c.blocks;
  cond["engine"] = "dflash-evald";
  cond["job"] = c.job_id;
  cond["curve"] = c.label;
  cond["proposal_policy"] = c.policy;
  if (!c.engine.empty()) cond["engine_rule"] = c.engine;
  cond["temperature"] = c.temperature;
  cond["top_p"] = c.top_p;
  cond["top_k"] = c.top_k;
  cond["mode"] = c.mode;
  cond["semantics"] = c.semantics;
  cond["family"] = c.family;
  cond["approximations"] = c.approximations;
  if (c.mean_accept_length_ci) {
    cond["mean_accept_length_ci95"] = {Round6(c.mean_accept_length_ci->lo),
                                       Round6(c.mean_accept_length_ci->hi)};
  }
  o["measurement_conditions"] = cond;
  // The same two checks Model-Optimizer's validate runs, computed here; they
  // pass by construction (CheckCurveInvariants ran first).
  double implied = 1;
  for (double m : c.marginal) implied += Round6(m);
  const double reported = Round6(c.mean_accept_length);
  ordered_json v;
  v["mean_consistency"] = {{"implied_mean_accept_length", Round6(implied)},
                           {"reported_mean_accept_length", reported},
                           {"abs_delta", Round6(std::fabs(implied - reported))},
                           {"tolerance", 0.02},
                           {"passed", std::fabs(implied - reported) <= 0.02}};
  v["marginal_monotonicity"] = {{"passed", true}, {"violations", ordered_json::array()}};
  o["validation"] = v;
  return o;
}

// vLLM's --speculative-config keys for the synthetic rejection sampler: the
// real drafter still runs, acceptance is drawn from these marginal rates
// (vllm/config/speculative.py: "the marginal probability that the first i+1
// draft tokens are all accepted", nonincreasing, one per speculative token).
ordered_json Vllm(const AcceptanceCurve& c) {
  ordered_json o;
  o["method"] = "dflash";
  o["num_speculative_tokens"] = c.block_size - 1;
  o["rejection_sample_method"] = "synthetic";
  o["synthetic_acceptance_rates"] = Rates(c.marginal);
  return o;
}

}  // namespace

absl::StatusOr<ProfileFormat> ParseProfileFormat(absl::string_view name) {
  if (name == "modelopt") return ProfileFormat::kModelOpt;
  if (name == "vllm") return ProfileFormat::kVllm;
  if (name == "sglang") return ProfileFormat::kSglang;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown profile format '", name, "' (known: modelopt, vllm, sglang)"));
}

const char* ProfileFormatName(ProfileFormat format) {
  switch (format) {
    case ProfileFormat::kModelOpt: return "modelopt";
    case ProfileFormat::kVllm: return "vllm";
    case ProfileFormat::kSglang: return "sglang";
  }
  return "?";
}

absl::StatusOr<std::string> ExportProfile(const AcceptanceCurve& curve, ProfileFormat format) {
  if (curve.blocks <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", curve.job_id, " measured no blocks: there is no acceptance to export"));
  }
  if (absl::Status s = CheckCurveInvariants(curve); !s.ok()) return s;
  switch (format) {
    case ProfileFormat::kModelOpt: return ModelOpt(curve).dump(2) + "\n";
    case ProfileFormat::kVllm: return Vllm(curve).dump(2) + "\n";
    case ProfileFormat::kSglang:
      // SGLang simulates one accept length per batch step: the mean tokens
      // per verification step, the bonus included (spec_utils.py,
      // SGLANG_SIMULATE_ACC_LEN; match-expected keeps that expectation).
      return absl::StrFormat(
          "# %s of job %s (%s): tokens per verify step, bonus included\n"
          "SGLANG_SIMULATE_ACC_LEN=%.6f\nSGLANG_SIMULATE_ACC_METHOD=match-expected\n",
          curve.label, curve.job_id, curve.dataset, curve.mean_accept_length);
  }
  return absl::InternalError("unhandled profile format");
}

}  // namespace dflash::served
