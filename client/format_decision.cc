#include "client/format_decision.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace dflash::client {
namespace {

std::string SettingText(const pb::SamplingSetting& s) {
  std::string out = absl::StrFormat("t=%g", s.temperature());
  if (s.top_p() > 0 && s.top_p() < 1) absl::StrAppend(&out, absl::StrFormat(",p=%g", s.top_p()));
  if (s.top_k() > 0) absl::StrAppend(&out, ",k=", s.top_k());
  if (!s.policy().empty()) absl::StrAppend(&out, " ", s.policy());
  if (!s.engine().empty()) absl::StrAppend(&out, " (", s.engine(), ")");
  return out;
}

absl::Status BadSpec(const std::string& spec, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--sampling '", spec, "': ", why, " (expected e.g. t=0.6,p=0.95,k=20 or t=0)"));
}

std::string Curve(const google::protobuf::RepeatedField<double>& v) {
  std::string out;
  for (int k = 0; k < v.size(); ++k) {
    absl::StrAppend(&out, absl::StrFormat("%s%d:%.3f", k ? " " : "", k + 1, v[k]));
  }
  return out;
}

}  // namespace

absl::StatusOr<pb::SamplingSetting> ParseSamplingSpec(const std::string& spec) {
  pb::SamplingSetting s;
  bool has_t = false;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    const std::vector<std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.size() != 2) return BadSpec(spec, absl::StrCat("'", part, "' is not KEY=VALUE"));
    double v = 0;
    if (!absl::SimpleAtod(kv[1], &v)) {
      return BadSpec(spec, absl::StrCat("'", kv[1], "' is not a number"));
    }
    // Ranges and conventions (k=-1 under an engine preset) are the
    // server's rules (eval/sampling_policy.h); only the syntax is checked here.
    if (kv[0] == "t") {
      s.set_temperature(v);
      has_t = true;
    } else if (kv[0] == "p") {
      s.set_top_p(v);
    } else if (kv[0] == "k") {
      int k = 0;
      if (!absl::SimpleAtoi(kv[1], &k)) return BadSpec(spec, "top-k must be a whole number");
      s.set_top_k(k);
    } else {
      return BadSpec(spec, absl::StrCat("unknown key '", kv[0], "' (t, p or k)"));
    }
  }
  if (!has_t) return BadSpec(spec, "missing t=TEMPERATURE");
  return s;
}

std::string FormatTargetConsistency(const pb::TargetConsistency& c, const std::string& target) {
  return absl::StrFormat(
      "target consistency with %s: %.1f%% (%d of %d response positions where "
      "argmax(lm_head(%sh)) is the data's next token)\n",
      target, 100.0 * c.fraction(), c.matches(), c.positions(),
      c.norm_applied() ? "" : "final_norm ");
}

std::string FormatDecisionMetrics(const pb::EvalResult& r) {
  std::string out;
  if (r.draft_length_curve_size() > 0) {
    absl::StrAppend(&out,
                    "draft-length curve (accept length, pooled, if only the first k positions "
                    "were proposed)\n  ",
                    Curve(r.draft_length_curve()), "\n");
  }
  return absl::StrCat(out, FormatSampledAcceptance(r));
}

std::string FormatSampledAcceptance(const pb::EvalResult& r) {
  std::string out;
  if (r.sampling_size() == 0) return out;
  if (r.has_target_consistency()) {
    absl::StrAppend(&out, FormatTargetConsistency(r.target_consistency(), "the target"));
  }
  absl::StrAppend(&out,
                  "sampled acceptance (expected; teacher-forced prefix, positions as independent "
                  "draws; +1 bonus token; accept length step-weighted, tau request-weighted)\n",
                  absl::StrFormat("  %-30s %13s %13s   %s\n", "setting policy (engine)",
                                  "accept length", "tau", "mean alpha[1..]"),
                  absl::StrFormat("  %-30s %13.3f %13.3f   (greedy, measured)\n", "greedy",
                                  r.accept_length_pooled(), r.tau()));
  for (const pb::SampledAcceptance& s : r.sampling()) {
    std::string alphas;
    for (int j = 0; j < s.mean_alpha_size(); ++j) {
      const bool reached = j >= s.counted_size() || s.counted(j) > 0;
      absl::StrAppend(&alphas, j ? " " : "",
                      reached ? absl::StrFormat("%.3f", s.mean_alpha(j)) : "unavailable");
    }
    absl::StrAppend(&out,
                    absl::StrFormat("  %-30s %13.3f %13.3f   %s\n", SettingText(s.setting()),
                                    s.expected_accept_length_pooled(), s.expected_tau(), alphas));
    absl::StrAppend(&out, "    curve ", Curve(s.draft_length_curve()), "\n");
    if (s.has_accept_length_ci()) {
      absl::StrAppend(&out, absl::StrFormat("    accept length 95%% interval [%.3f, %.3f]\n",
                                            s.accept_length_ci().lo(), s.accept_length_ci().hi()));
    }
  }
  return out;
}

}  // namespace dflash::client
