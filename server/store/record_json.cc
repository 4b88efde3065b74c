// The job record's own fields; its request's options and its result have
// files of their own (options_json.h, result_json.h).
#include "store/record_json.h"

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "store/field_json.h"
#include "store/options_json.h"
#include "store/result_json.h"

namespace dflash::store {

using json = nlohmann::json;

std::string RecordToJson(const types::JobRecord& r) {
  const types::JobRequest& q = r.request;
  // The params' table fields (types/eval_options_fields.h) among the job's.
  json request = StructToJson(q.params);
  request.update(json{{"options", OptionsToJson(q.params.options)},
                      {"run", q.run},
                      {"step", q.step},
                      {"labels", q.labels},
                      {"unload_after", q.unload_after},
                      {"gate",
                       {q.gate.reference, q.gate.metric, q.gate.min_delta,
                        q.gate.allow_recipe_mismatch, q.gate.has_floor, q.gate.floor}},
                      // "suite" is what ListQuery.suite matches (json_extract in SQLite).
                      {"suite", q.suite_datasets.empty() ? json(nullptr) : json(q.params.dataset)},
                      {"suite_datasets", q.suite_datasets}});
  json j = {{"id", r.id},
            {"state", types::JobStateName(r.state)},
            {"request", request},
            {"progress",
             {r.progress.blocks_done, r.progress.blocks_total, r.progress.samples_done,
              r.progress.samples_total, r.progress.elapsed_seconds, r.progress.eta_seconds,
              r.progress.blocks_total_is_bound}},
            {"error_code", r.error_code},
            {"error_message", r.error_message},
            {"create_unix_micros", r.create_unix_micros},
            {"start_unix_micros", r.start_unix_micros},
            {"end_unix_micros", r.end_unix_micros},
            {"server_version", r.server_version},
            {"device", r.device},
            {"dtype", r.dtype},
            {"drafter_fingerprint", r.drafter_fingerprint},
            {"dataset_fingerprint", r.dataset_fingerprint},
            {"interrupted_by_restart", r.interrupted_by_restart},
            {"resubmitted_from", r.resubmitted_from}};
  if (r.result) j["result"] = ResultToJson(*r.result);
  if (!r.attempts.empty()) {
    json attempts = json::array();
    for (const types::JobAttempt& a : r.attempts) {
      attempts.push_back({a.server, a.start_unix_micros, a.end_unix_micros, a.outcome});
    }
    j["attempts"] = attempts;
  }
  if (!r.server.empty()) j["server"] = r.server;
  if (!r.placement.empty()) j["placement"] = r.placement;
  if (!q.dataset_path.empty()) j["request"]["dataset_path"] = q.dataset_path;
  if (!q.target_path.empty()) j["request"]["target_path"] = q.target_path;
  if (!r.calibrations.empty()) {
    json list = json::array();
    for (const std::string& c : r.calibrations) list.push_back(json::parse(c, nullptr, false));
    j["calibrations"] = list;
  }
  return j.dump();
}

absl::StatusOr<types::JobRecord> RecordFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("stored job record is not a JSON object");
  }
  try {
    types::JobRecord r;
    r.id = j.at("id").get<std::string>();
    auto state = types::ParseJobState(j.at("state").get<std::string>());
    if (!state.ok()) return state.status();
    r.state = *state;
    const json& q = j.at("request");
    StructFromJson(q, r.request.params);
    r.request.params.options = OptionsFromJson(q.at("options"));
    r.request.run = q.at("run").get<std::string>();
    r.request.step = q.at("step").get<int64_t>();
    r.request.labels = q.at("labels").get<std::map<std::string, std::string>>();
    r.request.unload_after = q.at("unload_after").get<bool>();
    if (q.contains("suite_datasets")) {
      r.request.suite_datasets = q.at("suite_datasets").get<std::vector<std::string>>();
    }
    r.request.dataset_path = q.value("dataset_path", "");
    r.request.target_path = q.value("target_path", "");
    if (q.contains("gate")) {
      const json& g = q.at("gate");
      r.request.gate = {g.at(0).get<std::string>(), g.at(1).get<std::string>(),
                        g.at(2).get<double>(), g.size() > 3 && g.at(3).get<bool>()};
      if (g.size() > 5) {  // the slice floor (since slices)
        r.request.gate.has_floor = g.at(4).get<bool>();
        r.request.gate.floor = g.at(5).get<double>();
      }
    }
    const json& p = j.at("progress");
    r.progress = {p.at(0).get<int64_t>(), p.at(1).get<int64_t>(), p.at(2).get<int64_t>(),
                  p.at(3).get<int64_t>(), p.at(4).get<double>(),  p.at(5).get<double>()};
    // Records written before the bound flag have six entries.
    r.progress.blocks_total_is_bound = p.size() > 6 && p.at(6).get<bool>();
    r.error_code = j.at("error_code").get<int>();
    r.error_message = j.at("error_message").get<std::string>();
    r.create_unix_micros = j.at("create_unix_micros").get<int64_t>();
    r.start_unix_micros = j.at("start_unix_micros").get<int64_t>();
    r.end_unix_micros = j.at("end_unix_micros").get<int64_t>();
    r.server_version = j.at("server_version").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.dtype = j.at("dtype").get<std::string>();
    r.drafter_fingerprint = j.at("drafter_fingerprint").get<std::string>();
    r.dataset_fingerprint = j.at("dataset_fingerprint").get<std::string>();
    r.interrupted_by_restart = j.at("interrupted_by_restart").get<bool>();
    r.resubmitted_from = j.at("resubmitted_from").get<std::string>();
    if (j.contains("result")) r.result = ResultFromJson(j.at("result"));
    for (const json& c : j.value("calibrations", json::array())) r.calibrations.push_back(c.dump());
    // Fleet fields: absent in single-host records and records from before them.
    if (j.contains("attempts")) {
      for (const json& a : j.at("attempts")) {
        r.attempts.push_back({a.at(0).get<std::string>(), a.at(1).get<int64_t>(),
                              a.at(2).get<int64_t>(), a.at(3).get<std::string>()});
      }
    }
    r.server = j.value("server", "");
    r.placement = j.value("placement", "");
    return r;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("stored job record is malformed: ", e.what()));
  }
}

}  // namespace dflash::store
