#include "store/result_json.h"

#include <string>
#include <utility>
#include <vector>

#include "store/decision_metrics_json.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

json ShardsToJson(const std::vector<types::ShardPlacement>& shards) {
  json out = json::array();
  for (const types::ShardPlacement& s : shards) {
    out.push_back({{"first", s.first},
                   {"end", s.end},
                   {"blocks", s.blocks},
                   {"device", s.device},
                   {"server", s.server},
                   {"bytes_read", s.bytes_read},
                   {"seconds", s.seconds}});
  }
  return out;
}

std::vector<types::ShardPlacement> ShardsFromJson(const json& j) {
  std::vector<types::ShardPlacement> out;
  for (const json& s : j.value("shards", json::array())) {
    types::ShardPlacement p;
    p.first = s.value("first", int64_t{0});
    p.end = s.value("end", int64_t{0});
    p.blocks = s.value("blocks", int64_t{0});
    p.device = s.value("device", "");
    p.server = s.value("server", "");
    p.bytes_read = s.value("bytes_read", int64_t{0});
    p.seconds = s.value("seconds", 0.0);
    out.push_back(std::move(p));
  }
  return out;
}

json GateToJson(const types::GateVerdict& g) {
  return {{"reference_job", g.reference_job},
          {"metric", g.metric},
          {"min_delta", g.min_delta},
          {"value", g.value},
          {"reference_value", g.reference_value},
          {"delta", g.delta},
          {"delta_ci", IntervalToJson(g.delta_ci)},
          {"verdict", g.verdict},
          {"text", g.text},
          {"worst_slice", g.worst_slice},
          {"worst_slice_delta", g.worst_slice_delta}};
}

types::GateVerdict GateFromJson(const json& j) {
  types::GateVerdict g;
  g.reference_job = j.at("reference_job").get<std::string>();
  g.metric = j.at("metric").get<std::string>();
  g.min_delta = j.at("min_delta").get<double>();
  g.value = j.at("value").get<double>();
  g.reference_value = j.at("reference_value").get<double>();
  g.delta = j.at("delta").get<double>();
  g.delta_ci = IntervalFromJson(j, "delta_ci");
  g.verdict = j.at("verdict").get<std::string>();
  g.text = j.at("text").get<std::string>();
  g.worst_slice = j.value("worst_slice", "");  // absent before slice floors
  g.worst_slice_delta = j.value("worst_slice_delta", 0.0);
  return g;
}

json SuiteToJson(const std::vector<types::DatasetResult>& parts) {
  json out = json::array();
  for (const types::DatasetResult& d : parts) out.push_back({d.dataset, ResultToJson(d.result)});
  return out;
}

json PositionToJson(const types::PositionMetrics& p) {
  return {{"position", p.position},
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
          {"tf_accuracy", p.tf_accuracy},
          {"accuracy_ci", IntervalToJson(p.accuracy_ci)},
          {"acceptance_ci", IntervalToJson(p.acceptance_ci)},
          {"conditional_ci", IntervalToJson(p.conditional_ci)}};
}

// Per-sample entries are arrays, in this order (records from before the
// per-position counts hold six entries, from before slices ten).
json SampleToJson(const types::SampleSummary& s) {
  return json::array({s.sample_index, s.blocks, s.mean_accept_length, s.length,
                      s.first_response_position, s.accepted_total, s.counted, s.correct, s.accepted,
                      s.conditional_counted, s.response_tokens, s.loop_tokens, s.loop_blocks,
                      s.loop_accepted_total, s.context_blocks, s.context_accepted, s.category,
                      s.language, s.thinking});
}

json BaseResultToJson(const types::EvalResult& r) {
  json positions = json::array();
  for (const types::PositionMetrics& p : r.positions) positions.push_back(PositionToJson(p));
  json samples = json::array();
  for (const types::SampleSummary& s : r.per_sample) samples.push_back(SampleToJson(s));
  return {{"mode", static_cast<int>(r.mode)},
          {"block_size", r.block_size},
          {"samples", r.samples},
          {"blocks", r.blocks},
          {"tokens_scored", r.tokens_scored},
          {"draft_vocab_size", r.draft_vocab_size},
          {"labels_in_draft_vocab", r.labels_in_draft_vocab},
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
          {"target_fingerprint", r.target_fingerprint},
          {"warnings", r.warnings},
          {"family", r.family},
          {"semantics", r.semantics},
          {"semantics_reference", r.semantics_reference},
          {"selector_top_k", r.selector_top_k},
          {"unary_accept_length_pooled", r.unary_accept_length_pooled},
          {"oracle_accept_length_pooled", r.oracle_accept_length_pooled},
          {"first_miss",
           {r.first_miss.all_accepted, r.first_miss.coverage_miss, r.first_miss.ranking_error}},
          {"selector_near_ties", r.selector_near_ties},
          {"positions_to_first_miss", r.positions_to_first_miss},
          {"context_positions", r.context_positions},
          {"accept_length_ci", IntervalToJson(r.accept_length_ci)},
          {"tau_ci", IntervalToJson(r.tau_ci)},
          {"ci_resamples", r.ci_resamples},
          {"gate", r.gate ? GateToJson(*r.gate) : json(nullptr)},
          {"suite", r.suite},
          {"suite_results", SuiteToJson(r.suite_results)},
          {"shards", ShardsToJson(r.shards)}};
}

types::PositionMetrics PositionFromJson(const json& p) {
  types::PositionMetrics m;
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
  m.accuracy_ci = IntervalFromJson(p, "accuracy_ci");
  m.acceptance_ci = IntervalFromJson(p, "acceptance_ci");
  m.conditional_ci = IntervalFromJson(p, "conditional_ci");
  return m;
}

types::SampleSummary SampleFromJson(const json& s) {
  types::SampleSummary x;
  x.sample_index = s.at(0).get<int64_t>();
  x.blocks = s.at(1).get<int64_t>();
  x.mean_accept_length = s.at(2).get<double>();
  x.length = s.at(3).get<int64_t>();
  x.first_response_position = s.at(4).get<int64_t>();
  x.accepted_total = s.at(5).get<int64_t>();
  if (s.size() > 9) {  // per-position counts (records from before have six entries)
    x.counted = s.at(6).get<std::vector<int64_t>>();
    x.correct = s.at(7).get<std::vector<int64_t>>();
    x.accepted = s.at(8).get<std::vector<int64_t>>();
    x.conditional_counted = s.at(9).get<std::vector<int64_t>>();
  }
  if (s.size() > 18) {  // repetition, context buckets and metadata (since slices)
    x.response_tokens = s.at(10).get<int64_t>();
    x.loop_tokens = s.at(11).get<int64_t>();
    x.loop_blocks = s.at(12).get<int64_t>();
    x.loop_accepted_total = s.at(13).get<int64_t>();
    x.context_blocks = s.at(14).get<std::vector<int64_t>>();
    x.context_accepted = s.at(15).get<std::vector<int64_t>>();
    x.category = s.at(16).get<std::string>();
    x.language = s.at(17).get<std::string>();
    x.thinking = s.at(18).get<std::string>();
  }
  return x;
}

}  // namespace

json ResultToJson(const types::EvalResult& r) {
  json out = BaseResultToJson(r);
  if (!r.part_state.empty()) out["part_state"] = r.part_state;
  AddDecisionMetrics(r, out);
  return out;
}

types::EvalResult ResultFromJson(const json& j) {
  types::EvalResult r;
  r.mode = static_cast<types::Mode>(j.at("mode").get<int>());
  r.block_size = j.at("block_size").get<int64_t>();
  r.samples = j.at("samples").get<int64_t>();
  r.blocks = j.at("blocks").get<int64_t>();
  r.tokens_scored = j.at("tokens_scored").get<int64_t>();
  r.draft_vocab_size = j.value("draft_vocab_size", int64_t{0});  // absent in older records
  r.labels_in_draft_vocab = j.value("labels_in_draft_vocab", int64_t{0});
  r.accept_length_pooled = j.at("accept_length_pooled").get<double>();
  r.tau = j.at("tau").get<double>();
  for (const json& p : j.at("positions")) r.positions.push_back(PositionFromJson(p));
  r.accepted_histogram = j.at("accepted_histogram").get<std::vector<int64_t>>();
  for (const json& s : j.at("per_sample")) r.per_sample.push_back(SampleFromJson(s));
  r.setup_seconds = j.at("setup_seconds").get<double>();
  r.compute_seconds = j.at("compute_seconds").get<double>();
  r.tokens_per_second = j.at("tokens_per_second").get<double>();
  r.device = j.at("device").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.drafter_fingerprint = j.at("drafter_fingerprint").get<std::string>();
  r.dataset_fingerprint = j.at("dataset_fingerprint").get<std::string>();
  r.target_fingerprint = j.value("target_fingerprint", "");  // absent before recipes
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  // Results stored before DFlash 2 support were DFlash 1 under the older rules.
  r.family = j.value("family", "DFlash 1");
  r.semantics = j.value("semantics", "zlab-2025");
  r.semantics_reference =
      j.value("semantics_reference", types::SemanticsReference(types::Semantics::kZlab2025));
  r.selector_top_k = j.value("selector_top_k", int64_t{0});
  r.unary_accept_length_pooled = j.value("unary_accept_length_pooled", 0.0);
  r.oracle_accept_length_pooled = j.value("oracle_accept_length_pooled", 0.0);
  if (j.contains("first_miss")) {
    const json& f = j.at("first_miss");
    r.first_miss = {f.at(0).get<int64_t>(), f.at(1).get<int64_t>(), f.at(2).get<int64_t>()};
  }
  r.selector_near_ties = j.value("selector_near_ties", int64_t{0});
  r.positions_to_first_miss = j.value("positions_to_first_miss", false);
  r.context_positions = j.value("context_positions", int64_t{0});
  ReadDecisionMetrics(j, r);
  r.accept_length_ci = IntervalFromJson(j, "accept_length_ci");
  r.tau_ci = IntervalFromJson(j, "tau_ci");
  r.ci_resamples = j.value("ci_resamples", int64_t{0});
  r.shards = ShardsFromJson(j);
  r.part_state = j.value("part_state", "");
  if (j.contains("gate") && !j.at("gate").is_null()) r.gate = GateFromJson(j.at("gate"));
  r.suite = j.value("suite", "");
  if (j.contains("suite_results")) {
    for (const json& d : j.at("suite_results")) {
      r.suite_results.push_back({d.at(0).get<std::string>(), ResultFromJson(d.at(1))});
    }
  }
  return r;
}

}  // namespace dflash::store
