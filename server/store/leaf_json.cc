#include "store/leaf_json.h"

#include <string>

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

std::optional<types::Interval> IntervalFromJson(const json& value) {
  if (value.is_null()) return std::nullopt;
  return types::Interval{value.at(0).get<double>(), value.at(1).get<double>()};
}

}  // namespace dflash::store
