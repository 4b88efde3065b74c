#include "service/job_convert.h"

#include <map>

#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/recipe.h"
#include "service/eval_convert.h"
#include "service/field_proto.h"
#include "service/served_convert.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::service {

pb::JobState JobStateToProto(types::JobState state) {
  switch (state) {
    case types::JobState::kQueued: return pb::JOB_STATE_QUEUED;
    case types::JobState::kRunning: return pb::JOB_STATE_RUNNING;
    case types::JobState::kSucceeded: return pb::JOB_STATE_SUCCEEDED;
    case types::JobState::kFailed: return pb::JOB_STATE_FAILED;
    case types::JobState::kCancelled: return pb::JOB_STATE_CANCELLED;
    case types::JobState::kInterrupted: return pb::JOB_STATE_INTERRUPTED;
  }
  return pb::JOB_STATE_UNSPECIFIED;
}

absl::StatusOr<types::JobRequest> JobRequestFromProto(const pb::EvalRequest& in) {
  auto params = FromProto(in);
  if (!params.ok()) return params.status();
  RETURN_IF_ERROR(CheckName("run", in.run()));
  RETURN_IF_ERROR(NonNegative("step", in.step()));
  RETURN_IF_ERROR(CheckLabels(in.labels()));
  types::JobRequest r;
  r.params = *std::move(params);
  r.run = in.run();
  r.step = in.step();
  r.labels = std::map<std::string, std::string>(in.labels().begin(), in.labels().end());
  r.unload_after = in.unload_after();
  r.dataset_path = in.dataset_path();
  r.target_path = in.target_path();
  // The gate's fields as sent; which need which (a gate, a run) is
  // core/request_check.h's, checked at submit.
  if (!in.gate().empty()) RETURN_IF_ERROR(CheckName("gate", in.gate()));
  r.gate.reference = in.gate();
  if (!in.gate_metric().empty()) r.gate.metric = in.gate_metric();
  if (!(in.gate_min_delta() >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gate_min_delta must be >= 0; got ", in.gate_min_delta()));
  }
  r.gate.min_delta = in.gate_min_delta();
  r.gate.allow_recipe_mismatch = in.gate_allow_recipe_mismatch();
  if (in.has_gate_floor()) {
    if (!(in.gate_floor() >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("gate_floor must be >= 0 (the largest accepted fall of a slice's accept "
                       "length); got ",
                       in.gate_floor()));
    }
    r.gate.has_floor = true;
    r.gate.floor = in.gate_floor();
  }
  return r;
}

// The params' and options' table fields (types/eval_options_fields.h) by
// reflection, then the ones the tables leave to hand code, then the job's.
void ToProto(const types::JobRequest& in, pb::EvalRequest* out) {
  StructToProto(in.params, *out);
  const types::EvalOptions& o = in.params.options;
  StructToProto(o, *out);
  out->set_mode(o.mode == types::Mode::kAnchor ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
  switch (o.anchors) {
    case types::AnchorStrategy::kEven: out->set_anchors(pb::ANCHOR_STRATEGY_EVEN); break;
    case types::AnchorStrategy::kRandom: out->set_anchors(pb::ANCHOR_STRATEGY_RANDOM); break;
    case types::AnchorStrategy::kAll: out->set_anchors(pb::ANCHOR_STRATEGY_ALL); break;
  }
  out->set_semantics(types::SemanticsName(o.semantics));
  out->set_metrics(o.metrics == types::MetricSet::kAcceptance ? "acceptance" : "");
  for (const types::SamplingSetting& s : o.sampling) {
    pb::SamplingSetting* ps = out->add_sampling();
    ps->set_temperature(s.temperature);
    ps->set_top_p(s.top_p);
    ps->set_top_k(static_cast<int32_t>(s.top_k));
  }
  for (types::ProposalPolicy p : o.policies) out->add_policies(types::PolicyName(p));
  out->set_run(in.run);
  out->set_step(in.step);
  for (const auto& [k, v] : in.labels) (*out->mutable_labels())[k] = v;
  out->set_unload_after(in.unload_after);
  if (o.ci == types::CiMethod::kNone) out->set_ci("none");
  // 0 on the wire means the default; keep it 0 so requests round-trip.
  if (o.ci_resamples != types::EvalOptions{}.ci_resamples) {
    out->set_ci_resamples(static_cast<int32_t>(o.ci_resamples));
  }
  for (const std::string& d : in.suite_datasets) out->add_suite_datasets(d);
  out->set_dataset_path(in.dataset_path);
  out->set_target_path(in.target_path);
  if (!in.gate.reference.empty()) {
    out->set_gate(in.gate.reference);
    out->set_gate_metric(in.gate.metric);
    out->set_gate_min_delta(in.gate.min_delta);
    out->set_gate_allow_recipe_mismatch(in.gate.allow_recipe_mismatch);
    if (in.gate.has_floor) out->set_gate_floor(in.gate.floor);
  }
}

void ToProto(const types::JobRecord& in, pb::EvalJob* out) {
  out->set_id(in.id);
  out->set_state(JobStateToProto(in.state));
  ToProto(in.request, out->mutable_request());
  pb::EvalProgress* p = out->mutable_progress();
  p->set_blocks_done(in.progress.blocks_done);
  p->set_blocks_total(in.progress.blocks_total);
  p->set_samples_done(in.progress.samples_done);
  p->set_samples_total(in.progress.samples_total);
  p->set_elapsed_seconds(in.progress.elapsed_seconds);
  p->set_eta_seconds(in.progress.eta_seconds);
  p->set_blocks_total_is_upper_bound(in.progress.blocks_total_is_bound);
  if (in.result) {
    ToProto(*in.result, out->mutable_result());
    // Fingerprints known at submit time, for results that lack them.
    if (out->result().drafter_fingerprint().empty()) {
      out->mutable_result()->set_drafter_fingerprint(in.drafter_fingerprint);
    }
    if (out->result().dataset_fingerprint().empty()) {
      out->mutable_result()->set_dataset_fingerprint(in.dataset_fingerprint);
    }
    const core::Recipe recipe = core::RecipeOf(in);
    pb::Recipe* r = out->mutable_recipe();
    r->set_fingerprint(recipe.fingerprint);
    for (const core::RecipeField& f : recipe.fields) {
      pb::RecipeField* field = r->add_fields();
      field->set_name(f.name);
      field->set_value(f.value);
    }
  }
  out->set_error_code(in.error_code);
  out->set_error_message(in.error_message);
  if (in.create_unix_micros) *out->mutable_create_time() = FromUnixMicros(in.create_unix_micros);
  if (in.start_unix_micros) *out->mutable_start_time() = FromUnixMicros(in.start_unix_micros);
  if (in.end_unix_micros) *out->mutable_end_time() = FromUnixMicros(in.end_unix_micros);
  out->set_server_version(in.server_version);
  out->set_interrupted_by_restart(in.interrupted_by_restart);
  out->set_resubmitted_from(in.resubmitted_from);
  for (const types::JobAttempt& a : in.attempts) {
    pb::EvalAttempt* attempt = out->add_attempts();
    attempt->set_server(a.server);
    if (a.start_unix_micros) *attempt->mutable_start_time() = FromUnixMicros(a.start_unix_micros);
    if (a.end_unix_micros) *attempt->mutable_end_time() = FromUnixMicros(a.end_unix_micros);
    attempt->set_outcome(a.outcome);
  }
  out->set_server(in.server);
  out->set_placement(in.placement);
  for (const std::string& c : in.calibrations) {
    auto parsed = served::CalibrationFromJson(nlohmann::json::parse(c, nullptr, false));
    if (parsed.ok()) {
      ToProto(*parsed, out->add_calibrations());
    } else {
      // Shown, not dropped: the record is ours, so this is a store bug.
      pb::Calibration* bad = out->add_calibrations();
      bad->set_verdict("unreadable");
      bad->set_text(std::string(parsed.status().message()));
    }
  }
}

absl::StatusOr<types::ListQuery> FromProto(const pb::ListEvalsRequest& in) {
  types::ListQuery q;
  switch (in.state()) {
    case pb::JOB_STATE_UNSPECIFIED: break;
    case pb::JOB_STATE_QUEUED: q.state = types::JobState::kQueued; break;
    case pb::JOB_STATE_RUNNING: q.state = types::JobState::kRunning; break;
    case pb::JOB_STATE_SUCCEEDED: q.state = types::JobState::kSucceeded; break;
    case pb::JOB_STATE_FAILED: q.state = types::JobState::kFailed; break;
    case pb::JOB_STATE_CANCELLED: q.state = types::JobState::kCancelled; break;
    case pb::JOB_STATE_INTERRUPTED: q.state = types::JobState::kInterrupted; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("state ", static_cast<int>(in.state()), " is not a job state"));
  }
  RETURN_IF_ERROR(NonNegative("page_size", in.page_size()));
  if (in.page_size() > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must be <= ", kMaxPageSize, "; got ", in.page_size()));
  }
  RETURN_IF_ERROR(CheckName("page_token", in.page_token()));
  RETURN_IF_ERROR(CheckName("run", in.run()));
  RETURN_IF_ERROR(NonNegative("min_step", in.min_step()));
  RETURN_IF_ERROR(NonNegative("max_step", in.max_step()));
  if (in.min_step() > 0 && in.max_step() > 0 && in.min_step() > in.max_step()) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_step ", in.min_step(), " is greater than max_step ", in.max_step()));
  }
  RETURN_IF_ERROR(CheckLabels(in.labels()));
  q.drafter = in.drafter();
  q.dataset = in.dataset();
  q.run = in.run();
  RETURN_IF_ERROR(CheckName("suite", in.suite()));
  q.suite = in.suite();
  if (in.min_step() != 0) q.min_step = in.min_step();
  if (in.max_step() != 0) q.max_step = in.max_step();
  q.labels = std::map<std::string, std::string>(in.labels().begin(), in.labels().end());
  q.order_by_step = in.order_by_step();
  q.page_size = in.page_size();
  q.page_token = in.page_token();
  return q;
}

absl::StatusOr<std::vector<std::string>> JobIdsFromProto(const pb::CompareEvalsRequest& in) {
  if (in.ids_size() > kMaxCompareJobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("compare takes at most ", kMaxCompareJobs, " job ids; got ", in.ids_size()));
  }
  std::vector<std::string> ids;
  std::map<std::string, int> seen;
  for (int i = 0; i < in.ids_size(); ++i) {
    const std::string& id = in.ids(i);
    RETURN_IF_ERROR(CheckId(absl::StrCat("ids[", i, "]"), id));
    if (auto [it, fresh] = seen.emplace(id, i); !fresh) {
      return absl::InvalidArgumentError(
          absl::StrCat("ids[", i, "] repeats ids[", it->second, "] ('", id, "')"));
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<core::CompareOptions> CompareOptionsFromProto(const pb::CompareEvalsRequest& in) {
  RETURN_IF_ERROR(NonNegative("ci_resamples", in.ci_resamples()));
  if (in.ci_resamples() > kMaxCiResamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("ci_resamples must be <= ", kMaxCiResamples, "; got ", in.ci_resamples()));
  }
  core::CompareOptions o;
  o.require_paired = in.require_paired();
  o.allow_recipe_mismatch = in.allow_recipe_mismatch();
  if (in.ci_resamples() > 0) o.resamples = in.ci_resamples();
  o.seed = in.ci_seed();
  return o;
}

void ToProto(const core::Comparison& in, pb::CompareEvalsResponse* out) {
  for (const types::JobRecord& j : in.jobs) ToProto(j, out->add_jobs());
  for (const std::string& w : in.warnings) out->add_warnings(w);
  for (double v : in.accept_length) out->add_accept_length(v);
  for (double v : in.accept_length_delta) out->add_accept_length_delta(v);
  for (double v : in.tau) out->add_tau(v);
  for (const core::PositionComparison& p : in.positions) {
    pb::PositionComparison* pp = out->add_positions();
    pp->set_position(p.position);
    for (double v : p.accuracy) pp->add_accuracy(v);
    for (double v : p.accuracy_delta) pp->add_accuracy_delta(v);
    for (double v : p.acceptance) pp->add_acceptance(v);
  }
  for (const core::MetricDifference& d : in.differences) {
    pb::MetricDifference* pd = out->add_differences();
    pd->set_metric(d.metric);
    pd->set_job_index(d.job_index);
    pd->set_reference_value(d.reference_value);
    pd->set_value(d.value);
    pd->set_delta(d.delta);
    if (d.delta_ci) {
      pd->mutable_delta_ci()->set_lo(d.delta_ci->lo);
      pd->mutable_delta_ci()->set_hi(d.delta_ci->hi);
    }
    pd->set_excludes_zero(d.excludes_zero);
    pd->set_verdict(d.verdict);
  }
}

}  // namespace dflash::service
