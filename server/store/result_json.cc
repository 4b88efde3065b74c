#include "store/result_json.h"

#include <string>
#include <utility>

#include "store/field_json.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

// The keys the first stored records already held: a record missing one is
// malformed, not old. Frozen: fields added since are read with defaults.
// clang-format off
constexpr const char* kFirstRecordKeys[] = {
    "mode", "block_size", "samples", "blocks", "tokens_scored", "accept_length_pooled", "tau",
    "positions", "accepted_histogram", "per_sample", "setup_seconds", "compute_seconds",
    "tokens_per_second", "device", "dtype", "drafter_fingerprint", "dataset_fingerprint",
    "warnings"};
// clang-format on

// What the table cannot say: the enum mode, the first-miss split as three
// numbers, the target consistency (present only once computed) and a
// suite's [dataset, result] pairs.
void AddHandFields(const types::EvalResult& r, json& out) {
  out["mode"] = static_cast<int>(r.mode);
  out["first_miss"] = {r.first_miss.all_accepted, r.first_miss.coverage_miss,
                       r.first_miss.ranking_error};
  if (r.target_consistency.positions > 0) {
    out["target_consistency"] = StructToJson(r.target_consistency);
  }
  json suite = json::array();
  for (const types::DatasetResult& d : r.suite_results) {
    suite.push_back({d.dataset, ResultToJson(d.result)});
  }
  out["suite_results"] = std::move(suite);
}

void ReadHandFields(const json& j, types::EvalResult& r) {
  r.mode = static_cast<types::Mode>(j.at("mode").get<int>());
  if (j.contains("first_miss")) {
    const json& f = j.at("first_miss");
    r.first_miss = {f.at(0).get<int64_t>(), f.at(1).get<int64_t>(), f.at(2).get<int64_t>()};
  }
  if (j.contains("target_consistency")) {
    StructFromJson(j.at("target_consistency"), r.target_consistency);
  }
  for (const json& d : j.value("suite_results", json::array())) {
    r.suite_results.push_back({d.at(0).get<std::string>(), ResultFromJson(d.at(1))});
  }
  // Results stored before DFlash 2 support were DFlash 1 under the older
  // rules: their defaults are not the struct's.
  if (!j.contains("family")) r.family = "DFlash 1";
  if (!j.contains("semantics")) r.semantics = "zlab-2025";
  if (!j.contains("semantics_reference")) {
    r.semantics_reference = types::SemanticsReference(types::Semantics::kZlab2025);
  }
}

}  // namespace

json ResultToJson(const types::EvalResult& r) {
  json out = StructToJson(r);
  AddHandFields(r, out);
  return out;
}

types::EvalResult ResultFromJson(const json& j) {
  for (const char* key : kFirstRecordKeys) (void)j.at(key);  // throws when absent
  types::EvalResult r;
  StructFromJson(j, r);
  ReadHandFields(j, r);
  return r;
}

}  // namespace dflash::store
