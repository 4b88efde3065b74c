#include "served/calibration.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dflash::served {
namespace {

constexpr double kRatioTolerance = 0.02;
// A position is called off when its marginal ratio leaves 1 by more than
// this and enough steps reached it to tell.
constexpr double kPositionTolerance = 0.05;

// The proposal policy each engine's verifier implements
// (docs/served-acceptance.md, "Which engine does what").
const char* EngineRule(const std::string& source) {
  if (source == "vllm" || source == "sglang") return "argmax";
  if (source == "zlab") return "match";
  return "";
}

std::vector<std::string> Causes(const AcceptanceCurve& curve, const ServedCounters& served,
                                const Calibration& c) {
  std::vector<std::string> causes;
  const std::string rule = EngineRule(served.source);
  if (curve.policy == "greedy") {
    causes.push_back(absl::StrCat(
        "the job's greedy numbers were compared: if ", served.source,
        " served at temperature > 0, compare the sampled setting it used (--setting N, "
        "submitted with --engine ",
        served.source, ")"));
  } else if (!rule.empty() && curve.policy != rule) {
    causes.push_back(absl::StrCat("the job's numbers are policy=", curve.policy, "; ",
                                  served.source, " proposes and verifies as policy=", rule,
                                  " (submit with --engine ", served.source, ")"));
  }
  if (curve.mode == "anchor") {
    causes.push_back(
        "the job is anchor mode (blocks at the data's anchors, not a decode): replay mode predicts "
        "a served run");
  }
  // Where along the block the two part: at position 1 (different inputs:
  // data, template, weights, sampling) or only later (drift of the served
  // context away from the teacher-forced one).
  std::optional<int> first_off;
  for (const PositionCheck& p : c.positions) {
    if (p.ratio && std::fabs(*p.ratio - 1) > kPositionTolerance && p.predicted_marginal > 0.01) {
      first_off = p.position;
      break;
    }
  }
  if (first_off && *first_off == 1) {
    causes.push_back(
        "already off at draft position 1: the served prompts, chat template, drafter weights or "
        "sampling parameters differ from the job's");
  } else if (first_off) {
    causes.push_back(absl::StrCat(
        "positions 1..", *first_off - 1, " agree and position ", *first_off,
        " parts: served blocks see the engine's own continuation, the job a teacher-forced one "
        "(long outputs drift; a different max_new_tokens or stop rule changes the mix)"));
  } else if (c.positions.empty()) {
    causes.push_back(absl::StrCat(
        "the served prompts, chat template, sampling parameters (t, top-p, top-k) or drafter "
        "weights differ from the job's (",
        served.source, " gives no per-position counts to tell which)"));
  }
  if (c.ratio > 1 && served.source == "sglang") {
    causes.push_back("an SGLang run with short outputs: the prefill token is in completion_tokens");
  }
  return causes;
}

std::string Text(const Calibration& c, const AcceptanceCurve& curve, const ServedCounters& served) {
  std::string out = absl::StrFormat(
      "calibration %s vs job %s (%s)\n  %s-weighted accept length: served %.4f, predicted %.4f, "
      "ratio %.3f",
      c.source, curve.job_id, c.curve_label, c.weighting, c.served_accept_length,
      c.predicted_accept_length, c.ratio);
  if (c.predicted_interval) {
    absl::StrAppendFormat(&out, " (predicted 95%% [%.4f, %.4f])", c.predicted_interval->lo,
                          c.predicted_interval->hi);
  }
  absl::StrAppend(&out, "\n  verdict: ", c.verdict, "\n");
  if (served.steps > 0) {
    absl::StrAppendFormat(&out, "  served: %d verify steps, %d draft tokens accepted", served.steps,
                          served.accepted_tokens);
    if (served.requests > 0) absl::StrAppendFormat(&out, ", %d requests", served.requests);
    absl::StrAppend(&out, "\n");
  }
  if (!c.positions.empty()) {
    absl::StrAppend(&out, "  pos  served   predicted  ratio\n");
    for (const PositionCheck& p : c.positions) {
      absl::StrAppendFormat(
          &out, "  %3d  %.4f   %.4f     %s\n", p.position, p.served_marginal, p.predicted_marginal,
          p.ratio ? absl::StrFormat("%.3f", *p.ratio) : std::string("unavailable"));
    }
  }
  for (const std::string& n : served.notes) absl::StrAppend(&out, "  note: ", n, "\n");
  for (const std::string& a : curve.approximations) absl::StrAppend(&out, "  assumes: ", a, "\n");
  for (const std::string& cause : c.likely_causes) absl::StrAppend(&out, "  likely: ", cause, "\n");
  return out;
}

nlohmann::json Opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::optional<double> OptFrom(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

absl::StatusOr<Calibration> Calibrate(const AcceptanceCurve& curve, const ServedCounters& served) {
  if (absl::Status s = CheckCurveInvariants(curve); !s.ok()) return s;
  const int64_t k = curve.block_size - 1;
  if (served.num_speculative_tokens && *served.num_speculative_tokens != k) {
    return absl::InvalidArgumentError(absl::StrCat(
        served.source, " verified ", *served.num_speculative_tokens,
        " draft tokens per step but job ", curve.job_id, " has block size ", curve.block_size, " (",
        k, " drafts per step): serve with num_speculative_tokens=", k,
        " or evaluate with that block size"));
  }
  if (!served.served_marginal.empty() && static_cast<int64_t>(served.served_marginal.size()) != k) {
    return absl::InvalidArgumentError(
        absl::StrCat(served.source, " counts ", served.served_marginal.size(),
                     " draft positions but job ", curve.job_id, " has ", k));
  }
  Calibration c;
  c.source = served.source;
  c.curve_label = curve.label;
  c.weighting = served.weighting;
  c.served_accept_length = served.accept_length;
  if (served.weighting == "request") {
    c.predicted_accept_length = curve.mean_accept_length_per_request;
    c.predicted_interval = curve.per_request_ci;
  } else {
    c.predicted_accept_length = curve.mean_accept_length;
    c.predicted_interval = curve.mean_accept_length_ci;
  }
  c.ratio = c.predicted_accept_length > 0 ? c.served_accept_length / c.predicted_accept_length : 0;
  const bool in_interval = c.predicted_interval &&
                           c.served_accept_length >= c.predicted_interval->lo &&
                           c.served_accept_length <= c.predicted_interval->hi;
  c.verdict = std::fabs(c.ratio - 1) <= kRatioTolerance || in_interval ? "within" : "off";
  const std::vector<std::optional<double>> served_cond = ConditionalRates(served.served_marginal);
  const std::vector<std::optional<double>> predicted_cond = ConditionalRates(curve.marginal);
  for (size_t i = 0; i < served.served_marginal.size(); ++i) {
    PositionCheck p;
    p.position = static_cast<int>(i) + 1;
    p.served_marginal = served.served_marginal[i];
    p.predicted_marginal = curve.marginal[i];
    p.served_conditional = served_cond[i];
    p.predicted_conditional = predicted_cond[i];
    if (p.predicted_marginal > 0) p.ratio = p.served_marginal / p.predicted_marginal;
    c.positions.push_back(p);
  }
  if (c.verdict == "off") c.likely_causes = Causes(curve, served, c);
  c.text = Text(c, curve, served);
  return c;
}

nlohmann::json CalibrationToJson(const Calibration& c) {
  nlohmann::json j;
  j["source"] = c.source;
  j["curve"] = c.curve_label;
  j["weighting"] = c.weighting;
  j["served_accept_length"] = c.served_accept_length;
  j["predicted_accept_length"] = c.predicted_accept_length;
  j["ratio"] = c.ratio;
  j["predicted_interval"] = c.predicted_interval
                                ? nlohmann::json{c.predicted_interval->lo, c.predicted_interval->hi}
                                : nlohmann::json(nullptr);
  j["verdict"] = c.verdict;
  j["likely_causes"] = c.likely_causes;
  nlohmann::json positions = nlohmann::json::array();
  for (const PositionCheck& p : c.positions) {
    positions.push_back({{"position", p.position},
                         {"served_marginal", p.served_marginal},
                         {"predicted_marginal", p.predicted_marginal},
                         {"served_conditional", Opt(p.served_conditional)},
                         {"predicted_conditional", Opt(p.predicted_conditional)},
                         {"ratio", Opt(p.ratio)}});
  }
  j["positions"] = positions;
  j["text"] = c.text;
  j["created"] = c.created;
  return j;
}

absl::StatusOr<Calibration> CalibrationFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::DataLossError("stored calibration is not a JSON object");
  try {
    Calibration c;
    c.source = j.at("source").get<std::string>();
    c.curve_label = j.at("curve").get<std::string>();
    c.weighting = j.at("weighting").get<std::string>();
    c.served_accept_length = j.at("served_accept_length").get<double>();
    c.predicted_accept_length = j.at("predicted_accept_length").get<double>();
    c.ratio = j.at("ratio").get<double>();
    const nlohmann::json& interval = j.at("predicted_interval");
    if (interval.is_array() && interval.size() == 2) {
      c.predicted_interval = Range{interval[0].get<double>(), interval[1].get<double>()};
    }
    c.verdict = j.at("verdict").get<std::string>();
    c.likely_causes = j.at("likely_causes").get<std::vector<std::string>>();
    for (const nlohmann::json& p : j.at("positions")) {
      PositionCheck pc;
      pc.position = p.at("position").get<int>();
      pc.served_marginal = p.at("served_marginal").get<double>();
      pc.predicted_marginal = p.at("predicted_marginal").get<double>();
      pc.served_conditional = OptFrom(p, "served_conditional");
      pc.predicted_conditional = OptFrom(p, "predicted_conditional");
      pc.ratio = OptFrom(p, "ratio");
      c.positions.push_back(pc);
    }
    c.text = j.at("text").get<std::string>();
    c.created = j.at("created").get<std::string>();
    return c;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("stored calibration: ", e.what()));
  }
}

}  // namespace dflash::served
