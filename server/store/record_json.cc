#include "store/record_json.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

json OptionsToJson(const eval::EvalOptions& o) {
  return {{"mode", static_cast<int>(o.mode)},
          {"max_samples", o.max_samples},
          {"max_blocks", o.max_blocks},
          {"anchors", static_cast<int>(o.anchors)},
          {"seed", o.seed},
          {"block_size", o.block_size},
          {"max_new_tokens", o.max_new_tokens},
          {"max_chunk_elements", o.max_chunk_elements},
          {"semantics", model::SemanticsName(o.semantics)}};
}

eval::EvalOptions OptionsFromJson(const json& j) {
  eval::EvalOptions o;
  o.mode = static_cast<eval::Mode>(j.at("mode").get<int>());
  o.max_samples = j.at("max_samples").get<int64_t>();
  o.max_blocks = j.at("max_blocks").get<int64_t>();
  o.anchors = static_cast<eval::AnchorStrategy>(j.at("anchors").get<int>());
  o.seed = j.at("seed").get<uint64_t>();
  o.block_size = j.at("block_size").get<int64_t>();
  o.max_new_tokens = j.at("max_new_tokens").get<int64_t>();
  o.max_chunk_elements = j.at("max_chunk_elements").get<int64_t>();
  // Records written before semantics existed ran the older rules.
  o.semantics = model::ParseSemantics(j.value("semantics", "zlab-2025"))
                    .value_or(model::Semantics::kZlab2025);
  return o;
}

json ResultToJson(const eval::EvalResult& r) {
  json positions = json::array();
  for (const eval::PositionMetrics& p : r.positions) {
    positions.push_back({{"position", p.position},
                         {"counted", p.counted},
                         {"correct", p.correct},
                         {"accuracy", p.accuracy},
                         {"accepted", p.accepted},
                         {"acceptance", p.acceptance},
                         {"conditional_counted", p.conditional_counted},
                         {"conditional", p.conditional},
                         {"mean_cross_entropy", p.mean_cross_entropy},
                         {"cross_entropy_counted", p.cross_entropy_counted},
                         {"unary_correct", p.unary_correct},
                         {"unary_accuracy", p.unary_accuracy},
                         {"covered", p.covered},
                         {"coverage", p.coverage},
                         {"tf_correct", p.tf_correct},
                         {"tf_accuracy", p.tf_accuracy}});
  }
  json samples = json::array();
  for (const eval::SampleSummary& s : r.per_sample) {
    samples.push_back({s.sample_index, s.blocks, s.mean_accept_length, s.length,
                       s.first_response_position, s.accepted_total});
  }
  return {{"mode", static_cast<int>(r.mode)},
          {"block_size", r.block_size},
          {"samples", r.samples},
          {"blocks", r.blocks},
          {"tokens_scored", r.tokens_scored},
          {"accept_length_pooled", r.accept_length_pooled},
          {"tau", r.tau},
          {"positions", positions},
          {"accepted_histogram", r.accepted_histogram},
          {"per_sample", samples},
          {"setup_seconds", r.setup_seconds},
          {"compute_seconds", r.compute_seconds},
          {"tokens_per_second", r.tokens_per_second},
          {"device", r.device},
          {"dtype", r.dtype},
          {"drafter_fingerprint", r.drafter_fingerprint},
          {"dataset_fingerprint", r.dataset_fingerprint},
          {"warnings", r.warnings},
          {"family", r.family},
          {"semantics", r.semantics},
          {"semantics_reference", r.semantics_reference},
          {"selector_top_k", r.selector_top_k},
          {"unary_accept_length_pooled", r.unary_accept_length_pooled},
          {"oracle_accept_length_pooled", r.oracle_accept_length_pooled},
          {"first_miss",
           {r.first_miss.all_accepted, r.first_miss.coverage_miss, r.first_miss.ranking_error}},
          {"selector_near_ties", r.selector_near_ties}};
}

eval::EvalResult ResultFromJson(const json& j) {
  eval::EvalResult r;
  r.mode = static_cast<eval::Mode>(j.at("mode").get<int>());
  r.block_size = j.at("block_size").get<int64_t>();
  r.samples = j.at("samples").get<int64_t>();
  r.blocks = j.at("blocks").get<int64_t>();
  r.tokens_scored = j.at("tokens_scored").get<int64_t>();
  r.accept_length_pooled = j.at("accept_length_pooled").get<double>();
  r.tau = j.at("tau").get<double>();
  for (const json& p : j.at("positions")) {
    eval::PositionMetrics m;
    m.position = p.at("position").get<int>();
    m.counted = p.at("counted").get<int64_t>();
    m.correct = p.at("correct").get<int64_t>();
    m.accuracy = p.at("accuracy").get<double>();
    m.accepted = p.at("accepted").get<int64_t>();
    m.acceptance = p.at("acceptance").get<double>();
    m.conditional_counted = p.at("conditional_counted").get<int64_t>();
    m.conditional = p.at("conditional").get<double>();
    m.mean_cross_entropy = p.at("mean_cross_entropy").get<double>();
    m.cross_entropy_counted = p.at("cross_entropy_counted").get<int64_t>();
    m.unary_correct = p.value("unary_correct", int64_t{0});
    m.unary_accuracy = p.value("unary_accuracy", 0.0);
    m.covered = p.value("covered", int64_t{0});
    m.coverage = p.value("coverage", 0.0);
    m.tf_correct = p.value("tf_correct", int64_t{0});
    m.tf_accuracy = p.value("tf_accuracy", 0.0);
    r.positions.push_back(m);
  }
  r.accepted_histogram = j.at("accepted_histogram").get<std::vector<int64_t>>();
  for (const json& s : j.at("per_sample")) {
    eval::SampleSummary x;
    x.sample_index = s.at(0).get<int64_t>();
    x.blocks = s.at(1).get<int64_t>();
    x.mean_accept_length = s.at(2).get<double>();
    x.length = s.at(3).get<int64_t>();
    x.first_response_position = s.at(4).get<int64_t>();
    x.accepted_total = s.at(5).get<int64_t>();
    r.per_sample.push_back(x);
  }
  r.setup_seconds = j.at("setup_seconds").get<double>();
  r.compute_seconds = j.at("compute_seconds").get<double>();
  r.tokens_per_second = j.at("tokens_per_second").get<double>();
  r.device = j.at("device").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.drafter_fingerprint = j.at("drafter_fingerprint").get<std::string>();
  r.dataset_fingerprint = j.at("dataset_fingerprint").get<std::string>();
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  // Results stored before DFlash 2 support were DFlash 1 under the older rules.
  r.family = j.value("family", "DFlash 1");
  r.semantics = j.value("semantics", "zlab-2025");
  r.semantics_reference =
      j.value("semantics_reference", model::SemanticsReference(model::Semantics::kZlab2025));
  r.selector_top_k = j.value("selector_top_k", int64_t{0});
  r.unary_accept_length_pooled = j.value("unary_accept_length_pooled", 0.0);
  r.oracle_accept_length_pooled = j.value("oracle_accept_length_pooled", 0.0);
  if (j.contains("first_miss")) {
    const json& f = j.at("first_miss");
    r.first_miss = {f.at(0).get<int64_t>(), f.at(1).get<int64_t>(), f.at(2).get<int64_t>()};
  }
  r.selector_near_ties = j.value("selector_near_ties", int64_t{0});
  return r;
}

}  // namespace

std::string RecordToJson(const jobs::JobRecord& r) {
  const jobs::JobRequest& q = r.request;
  json j = {{"id", r.id},
            {"state", jobs::JobStateName(r.state)},
            {"request",
             {{"drafter", q.params.drafter},
              {"checkpoint_path", q.params.checkpoint_path},
              {"dataset", q.params.dataset},
              {"target", q.params.target},
              {"options", OptionsToJson(q.params.options)},
              {"run", q.run},
              {"step", q.step},
              {"labels", q.labels},
              {"unload_after", q.unload_after}}},
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
    for (const jobs::JobAttempt& a : r.attempts) {
      attempts.push_back({a.server, a.start_unix_micros, a.end_unix_micros, a.outcome});
    }
    j["attempts"] = attempts;
  }
  if (!r.server.empty()) j["server"] = r.server;
  if (!r.placement.empty()) j["placement"] = r.placement;
  return j.dump();
}

absl::StatusOr<jobs::JobRecord> RecordFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("stored job record is not a JSON object");
  }
  try {
    jobs::JobRecord r;
    r.id = j.at("id").get<std::string>();
    auto state = jobs::ParseJobState(j.at("state").get<std::string>());
    if (!state.ok()) return state.status();
    r.state = *state;
    const json& q = j.at("request");
    r.request.params.drafter = q.at("drafter").get<std::string>();
    r.request.params.checkpoint_path = q.at("checkpoint_path").get<std::string>();
    r.request.params.dataset = q.at("dataset").get<std::string>();
    r.request.params.target = q.at("target").get<std::string>();
    r.request.params.options = OptionsFromJson(q.at("options"));
    r.request.run = q.at("run").get<std::string>();
    r.request.step = q.at("step").get<int64_t>();
    r.request.labels = q.at("labels").get<std::map<std::string, std::string>>();
    r.request.unload_after = q.at("unload_after").get<bool>();
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
