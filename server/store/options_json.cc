#include "store/options_json.h"

#include <string>

#include "store/field_json.h"
#include "store/leaf_json.h"
#include "types/eval_options_fields.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::store {

using json = nlohmann::json;

// The table's fields (types/eval_options_fields.h), then the ones it leaves
// to hand code: enums and named sets, lists, the intervals, a shard job's.
json OptionsToJson(const types::EvalOptions& o) {
  json out = StructToJson(o);
  out["mode"] = static_cast<int>(o.mode);
  out["anchors"] = static_cast<int>(o.anchors);
  out["semantics"] = types::SemanticsName(o.semantics);
  out["metrics"] = o.metrics == types::MetricSet::kAcceptance ? "acceptance" : "all";
  out["ci"] = o.ci == types::CiMethod::kNone ? "none" : "bootstrap";
  out["ci_resamples"] = o.ci_resamples;
  if (!o.sampling.empty()) {
    json list = json::array();
    for (const types::SamplingSetting& s : o.sampling) list.push_back(SettingToJson(s));
    out["sampling"] = list;
  }
  if (!o.policies.empty()) {
    json list = json::array();
    for (types::ProposalPolicy p : o.policies) list.push_back(types::PolicyName(p));
    out["policies"] = list;
  }
  if (o.sample_end > 0) {  // a fleet's shard job (fleet/fleet_shards.h)
    out["shard"] = {{"of", o.shard_of},
                    {"index", o.shard_index},
                    {"begin", o.sample_begin},
                    {"end", o.sample_end}};
  }
  return out;
}

types::EvalOptions OptionsFromJson(const json& j) {
  types::EvalOptions o;
  StructFromJson(j, o);
  o.mode = static_cast<types::Mode>(j.at("mode").get<int>());
  o.anchors = static_cast<types::AnchorStrategy>(j.at("anchors").get<int>());
  // Records written before semantics existed ran the older rules.
  o.semantics = types::ParseSemantics(j.value("semantics", "zlab-2025"))
                    .value_or(types::Semantics::kZlab2025);
  o.metrics = j.value("metrics", "all") == "acceptance" ? types::MetricSet::kAcceptance
                                                        : types::MetricSet::kAll;
  for (const json& s : j.value("sampling", json::array())) o.sampling.push_back(SettingFromJson(s));
  for (const json& p : j.value("policies", json::array())) {
    o.policies.push_back(
        types::ParsePolicy(p.get<std::string>()).value_or(types::ProposalPolicy::kDefault));
  }
  // Records from before intervals existed: no intervals were asked for.
  o.ci = j.value("ci", "none") == "none" ? types::CiMethod::kNone : types::CiMethod::kBootstrap;
  o.ci_resamples = j.value("ci_resamples", int64_t{0});
  if (j.contains("shard")) {
    const json& sh = j.at("shard");
    o.shard_of = sh.at("of").get<std::string>();
    o.shard_index = sh.at("index").get<int64_t>();
    o.sample_begin = sh.at("begin").get<int64_t>();
    o.sample_end = sh.at("end").get<int64_t>();
  }
  return o;
}

}  // namespace dflash::store
