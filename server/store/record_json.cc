#include "store/record_json.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

// Sampling settings, sampled acceptance, the draft-length curve and the
// target consistency (docs/decision-metrics.md); absent in older records.
json SettingToJson(const eval::SamplingSetting& s) {
  json out = {{"temperature", s.temperature}, {"top_p", s.top_p}, {"top_k", s.top_k}};
  if (s.policy != eval::ProposalPolicy::kDefault) out["policy"] = eval::PolicyName(s.policy);
  if (!s.engine.empty()) out["engine"] = s.engine;
  if (!s.truncate_draft) out["truncate_draft"] = false;
  return out;
}

// Records from before policies hold none: kDefault, the drafter's own rule.
eval::SamplingSetting SettingFromJson(const json& j) {
  eval::SamplingSetting s;
  s.temperature = j.at("temperature").get<double>();
  s.top_p = j.at("top_p").get<double>();
  s.top_k = j.at("top_k").get<int64_t>();
  s.policy = eval::ParsePolicy(j.value("policy", "")).value_or(eval::ProposalPolicy::kDefault);
  s.engine = j.value("engine", "");
  s.truncate_draft = j.value("truncate_draft", true);
  return s;
}

// Intervals as [lo, hi]; null when absent.
json IntervalToJson(const std::optional<eval::Interval>& i) {
  return i ? json::array({i->lo, i->hi}) : json(nullptr);
}

std::optional<eval::Interval> IntervalFromJson(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& i = j.at(key);
  return eval::Interval{i.at(0).get<double>(), i.at(1).get<double>()};
}

void AddDecisionMetrics(const eval::EvalResult& r, json& out) {
  if (!r.draft_length_curve.empty()) out["draft_length_curve"] = r.draft_length_curve;
  if (!r.sampling.empty()) {
    json list = json::array();
    for (const eval::SampledAcceptance& s : r.sampling) {
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
    for (const eval::SliceResult& x : r.slices) {
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
  const eval::TargetConsistency& c = r.target_consistency;
  if (c.positions > 0) {
    out["target_consistency"] = {{"positions", c.positions},
                                 {"matches", c.matches},
                                 {"fraction", c.fraction},
                                 {"norm_applied", c.norm_applied}};
  }
}

void ReadDecisionMetrics(const json& j, eval::EvalResult& r) {
  if (j.contains("draft_length_curve")) {
    r.draft_length_curve = j.at("draft_length_curve").get<std::vector<double>>();
  }
  for (const json& s : j.value("sampling", json::array())) {
    eval::SampledAcceptance a;
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
      a.accept_length_ci = eval::Interval{ci.at(0).get<double>(), ci.at(1).get<double>()};
    }
    r.sampling.push_back(std::move(a));
  }
  for (const json& x : j.value("slices", json::array())) {
    eval::SliceResult sl;
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

json BaseOptionsToJson(const eval::EvalOptions& o) {
  return {{"mode", static_cast<int>(o.mode)},
          {"max_samples", o.max_samples},
          {"max_blocks", o.max_blocks},
          {"anchors", static_cast<int>(o.anchors)},
          {"seed", o.seed},
          {"block_size", o.block_size},
          {"max_new_tokens", o.max_new_tokens},
          {"max_chunk_elements", o.max_chunk_elements},
          {"semantics", model::SemanticsName(o.semantics)},
          {"metrics", o.metrics == eval::MetricSet::kAcceptance ? "acceptance" : "all"},
          {"full_positions", o.full_positions},
          {"ci", o.ci == eval::CiMethod::kNone ? "none" : "bootstrap"},
          {"ci_resamples", o.ci_resamples},
          {"shards", o.shards}};
}

json ShardsToJson(const std::vector<eval::ShardPlacement>& shards) {
  json out = json::array();
  for (const eval::ShardPlacement& s : shards) {
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

std::vector<eval::ShardPlacement> ShardsFromJson(const json& j) {
  std::vector<eval::ShardPlacement> out;
  for (const json& s : j.value("shards", json::array())) {
    eval::ShardPlacement p;
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

json GateToJson(const eval::GateVerdict& g) {
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

eval::GateVerdict GateFromJson(const json& j) {
  eval::GateVerdict g;
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

json OptionsToJson(const eval::EvalOptions& o) {
  json out = BaseOptionsToJson(o);
  if (!o.sampling.empty()) {
    json list = json::array();
    for (const eval::SamplingSetting& s : o.sampling) list.push_back(SettingToJson(s));
    out["sampling"] = list;
  }
  if (!o.policies.empty()) {
    json list = json::array();
    for (eval::ProposalPolicy p : o.policies) list.push_back(eval::PolicyName(p));
    out["policies"] = list;
  }
  if (!o.engine.empty()) out["engine"] = o.engine;
  if (o.sample_end > 0) {  // a fleet's shard job (core/fleet_shards.h)
    out["shard"] = {{"of", o.shard_of},
                    {"index", o.shard_index},
                    {"begin", o.sample_begin},
                    {"end", o.sample_end}};
  }
  return out;
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
  o.metrics = j.value("metrics", "all") == "acceptance" ? eval::MetricSet::kAcceptance
                                                        : eval::MetricSet::kAll;
  o.full_positions = j.value("full_positions", false);
  for (const json& s : j.value("sampling", json::array())) o.sampling.push_back(SettingFromJson(s));
  for (const json& p : j.value("policies", json::array())) {
    o.policies.push_back(
        eval::ParsePolicy(p.get<std::string>()).value_or(eval::ProposalPolicy::kDefault));
  }
  o.engine = j.value("engine", "");
  // Records from before intervals existed: no intervals were asked for.
  o.ci = j.value("ci", "none") == "none" ? eval::CiMethod::kNone : eval::CiMethod::kBootstrap;
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

json ResultToJson(const eval::EvalResult& r);
eval::EvalResult ResultFromJson(const json& j);

json SuiteToJson(const std::vector<eval::DatasetResult>& parts) {
  json out = json::array();
  for (const eval::DatasetResult& d : parts) out.push_back({d.dataset, ResultToJson(d.result)});
  return out;
}

json BaseResultToJson(const eval::EvalResult& r) {
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
                         {"tf_accuracy", p.tf_accuracy},
                         {"accuracy_ci", IntervalToJson(p.accuracy_ci)},
                         {"acceptance_ci", IntervalToJson(p.acceptance_ci)},
                         {"conditional_ci", IntervalToJson(p.conditional_ci)}});
  }
  json samples = json::array();
  for (const eval::SampleSummary& s : r.per_sample) {
    samples.push_back({s.sample_index, s.blocks, s.mean_accept_length, s.length,
                       s.first_response_position, s.accepted_total, s.counted, s.correct,
                       s.accepted, s.conditional_counted, s.response_tokens, s.loop_tokens,
                       s.loop_blocks, s.loop_accepted_total, s.context_blocks, s.context_accepted,
                       s.category, s.language, s.thinking});
  }
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

json ResultToJson(const eval::EvalResult& r) {
  json out = BaseResultToJson(r);
  if (!r.part_state.empty()) out["part_state"] = r.part_state;
  AddDecisionMetrics(r, out);
  return out;
}

eval::EvalResult ResultFromJson(const json& j) {
  eval::EvalResult r;
  r.mode = static_cast<eval::Mode>(j.at("mode").get<int>());
  r.block_size = j.at("block_size").get<int64_t>();
  r.samples = j.at("samples").get<int64_t>();
  r.blocks = j.at("blocks").get<int64_t>();
  r.tokens_scored = j.at("tokens_scored").get<int64_t>();
  r.draft_vocab_size = j.value("draft_vocab_size", int64_t{0});  // absent in older records
  r.labels_in_draft_vocab = j.value("labels_in_draft_vocab", int64_t{0});
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
    m.accuracy_ci = IntervalFromJson(p, "accuracy_ci");
    m.acceptance_ci = IntervalFromJson(p, "acceptance_ci");
    m.conditional_ci = IntervalFromJson(p, "conditional_ci");
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
    r.per_sample.push_back(x);
  }
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
      j.value("semantics_reference", model::SemanticsReference(model::Semantics::kZlab2025));
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
              {"unload_after", q.unload_after},
              {"gate",
               {q.gate.reference, q.gate.metric, q.gate.min_delta, q.gate.allow_recipe_mismatch,
                q.gate.has_floor, q.gate.floor}},
              // "suite" is what ListQuery.suite matches (json_extract in SQLite).
              {"suite", q.suite_datasets.empty() ? json(nullptr) : json(q.params.dataset)},
              {"suite_datasets", q.suite_datasets}}},
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
  if (!q.dataset_path.empty()) j["request"]["dataset_path"] = q.dataset_path;
  if (!q.target_path.empty()) j["request"]["target_path"] = q.target_path;
  if (!r.calibrations.empty()) {
    json list = json::array();
    for (const std::string& c : r.calibrations) list.push_back(json::parse(c, nullptr, false));
    j["calibrations"] = list;
  }
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
