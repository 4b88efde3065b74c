#include "store/options_json.h"

#include <string>

#include "store/leaf_json.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

json BaseOptionsToJson(const types::EvalOptions& o) {
  return {{"mode", static_cast<int>(o.mode)},
          {"max_samples", o.max_samples},
          {"max_blocks", o.max_blocks},
          {"anchors", static_cast<int>(o.anchors)},
          {"seed", o.seed},
          {"block_size", o.block_size},
          {"max_new_tokens", o.max_new_tokens},
          {"max_chunk_elements", o.max_chunk_elements},
          {"semantics", types::SemanticsName(o.semantics)},
          {"metrics", o.metrics == types::MetricSet::kAcceptance ? "acceptance" : "all"},
          {"full_positions", o.full_positions},
          {"ci", o.ci == types::CiMethod::kNone ? "none" : "bootstrap"},
          {"ci_resamples", o.ci_resamples},
          {"shards", o.shards}};
}

}  // namespace

json OptionsToJson(const types::EvalOptions& o) {
  json out = BaseOptionsToJson(o);
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
  if (!o.engine.empty()) out["engine"] = o.engine;
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
  o.mode = static_cast<types::Mode>(j.at("mode").get<int>());
  o.max_samples = j.at("max_samples").get<int64_t>();
  o.max_blocks = j.at("max_blocks").get<int64_t>();
  o.anchors = static_cast<types::AnchorStrategy>(j.at("anchors").get<int>());
  o.seed = j.at("seed").get<uint64_t>();
  o.block_size = j.at("block_size").get<int64_t>();
  o.max_new_tokens = j.at("max_new_tokens").get<int64_t>();
  o.max_chunk_elements = j.at("max_chunk_elements").get<int64_t>();
  // Records written before semantics existed ran the older rules.
  o.semantics = types::ParseSemantics(j.value("semantics", "zlab-2025"))
                    .value_or(types::Semantics::kZlab2025);
  o.metrics = j.value("metrics", "all") == "acceptance" ? types::MetricSet::kAcceptance
                                                        : types::MetricSet::kAll;
  o.full_positions = j.value("full_positions", false);
  for (const json& s : j.value("sampling", json::array())) o.sampling.push_back(SettingFromJson(s));
  for (const json& p : j.value("policies", json::array())) {
    o.policies.push_back(
        types::ParsePolicy(p.get<std::string>()).value_or(types::ProposalPolicy::kDefault));
  }
  o.engine = j.value("engine", "");
  // Records from before intervals existed: no intervals were asked for.
  o.ci = j.value("ci", "none") == "none" ? types::CiMethod::kNone : types::CiMethod::kBootstrap;
  o.ci_resamples = j.value("ci_resamples", int64_t{0});
  o.shards = j.value("shards", int64_t{0});
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
