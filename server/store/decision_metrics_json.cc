#include "store/decision_metrics_json.h"

#include <string>
#include <utility>
#include <vector>

#include "types/proposal_policy.h"

namespace dflash::store {

using json = nlohmann::json;

json SettingToJson(const types::SamplingSetting& s) {
  json out = {{"temperature", s.temperature}, {"top_p", s.top_p}, {"top_k", s.top_k}};
  if (s.policy != types::ProposalPolicy::kDefault) out["policy"] = types::PolicyName(s.policy);
  if (!s.engine.empty()) out["engine"] = s.engine;
  if (!s.truncate_draft) out["truncate_draft"] = false;
  return out;
}

types::SamplingSetting SettingFromJson(const json& j) {
  types::SamplingSetting s;
  s.temperature = j.at("temperature").get<double>();
  s.top_p = j.at("top_p").get<double>();
  s.top_k = j.at("top_k").get<int64_t>();
  s.policy = types::ParsePolicy(j.value("policy", "")).value_or(types::ProposalPolicy::kDefault);
  s.engine = j.value("engine", "");
  s.truncate_draft = j.value("truncate_draft", true);
  return s;
}

json IntervalToJson(const std::optional<types::Interval>& i) {
  return i ? json::array({i->lo, i->hi}) : json(nullptr);
}

std::optional<types::Interval> IntervalFromJson(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& i = j.at(key);
  return types::Interval{i.at(0).get<double>(), i.at(1).get<double>()};
}

void AddDecisionMetrics(const types::EvalResult& r, json& out) {
  if (!r.draft_length_curve.empty()) out["draft_length_curve"] = r.draft_length_curve;
  if (!r.sampling.empty()) {
    json list = json::array();
    for (const types::SampledAcceptance& s : r.sampling) {
      list.push_back({{"setting", SettingToJson(s.setting)},
                      {"mean_alpha", s.mean_alpha},
                      {"counted", s.counted},
                      {"expected_accept_length_pooled", s.expected_accept_length_pooled},
                      {"expected_tau", s.expected_tau},
                      {"draft_length_curve", s.draft_length_curve},
                      {"marginal_accept", s.marginal_accept},
                      {"histogram", s.histogram},
                      {"approximations", s.approximations},
                      {"greedy_equivalent", s.greedy_equivalent}});
      if (s.accept_length_ci) {
        list.back()["accept_length_ci"] = {s.accept_length_ci->lo, s.accept_length_ci->hi};
      }
    }
    out["sampling"] = list;
  }
  if (!r.slices.empty()) {
    json list = json::array();
    for (const types::SliceResult& x : r.slices) {
      list.push_back({{"kind", x.kind},
                      {"value", x.value},
                      {"samples", x.samples},
                      {"blocks", x.blocks},
                      {"accept_length", x.accept_length},
                      {"tau", x.tau},
                      {"accept_length_ci", IntervalToJson(x.accept_length_ci)},
                      {"tau_ci", IntervalToJson(x.tau_ci)}});
    }
    out["slices"] = list;
  }
  out["loop_token_share"] = r.loop_token_share;
  out["loop_accept_share"] = r.loop_accept_share;
  const types::TargetConsistency& c = r.target_consistency;
  if (c.positions > 0) {
    out["target_consistency"] = {{"positions", c.positions},
                                 {"matches", c.matches},
                                 {"fraction", c.fraction},
                                 {"norm_applied", c.norm_applied}};
  }
}

void ReadDecisionMetrics(const json& j, types::EvalResult& r) {
  if (j.contains("draft_length_curve")) {
    r.draft_length_curve = j.at("draft_length_curve").get<std::vector<double>>();
  }
  for (const json& s : j.value("sampling", json::array())) {
    types::SampledAcceptance a;
    a.setting = SettingFromJson(s.at("setting"));
    a.mean_alpha = s.at("mean_alpha").get<std::vector<double>>();
    a.counted = s.at("counted").get<std::vector<int64_t>>();
    a.expected_accept_length_pooled = s.at("expected_accept_length_pooled").get<double>();
    a.expected_tau = s.at("expected_tau").get<double>();
    a.draft_length_curve = s.at("draft_length_curve").get<std::vector<double>>();
    a.marginal_accept = s.value("marginal_accept", std::vector<double>{});
    a.histogram = s.value("histogram", std::vector<double>{});
    a.approximations = s.value("approximations", std::vector<std::string>{});
    a.greedy_equivalent = s.value("greedy_equivalent", "");
    if (s.contains("accept_length_ci")) {
      const json& ci = s.at("accept_length_ci");
      a.accept_length_ci = types::Interval{ci.at(0).get<double>(), ci.at(1).get<double>()};
    }
    r.sampling.push_back(std::move(a));
  }
  for (const json& x : j.value("slices", json::array())) {
    types::SliceResult sl;
    sl.kind = x.at("kind").get<std::string>();
    sl.value = x.at("value").get<std::string>();
    sl.samples = x.at("samples").get<int64_t>();
    sl.blocks = x.at("blocks").get<int64_t>();
    sl.accept_length = x.at("accept_length").get<double>();
    sl.tau = x.at("tau").get<double>();
    sl.accept_length_ci = IntervalFromJson(x, "accept_length_ci");
    sl.tau_ci = IntervalFromJson(x, "tau_ci");
    r.slices.push_back(std::move(sl));
  }
  r.loop_token_share = j.value("loop_token_share", 0.0);  // absent before slices
  r.loop_accept_share = j.value("loop_accept_share", 0.0);
  if (j.contains("target_consistency")) {
    const json& c = j.at("target_consistency");
    r.target_consistency.positions = c.at("positions").get<int64_t>();
    r.target_consistency.matches = c.at("matches").get<int64_t>();
    r.target_consistency.fraction = c.at("fraction").get<double>();
    r.target_consistency.norm_applied = c.at("norm_applied").get<bool>();
  }
}

}  // namespace dflash::store
