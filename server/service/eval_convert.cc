#include "service/eval_convert.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::service {
namespace {

void SetInterval(const std::optional<types::Interval>& in, pb::Interval* out) {
  out->set_lo(in->lo);
  out->set_hi(in->hi);
}

void GateToProto(const types::GateVerdict& in, pb::GateVerdict* out) {
  out->set_reference_job(in.reference_job);
  out->set_metric(in.metric);
  out->set_min_delta(in.min_delta);
  out->set_value(in.value);
  out->set_reference_value(in.reference_value);
  out->set_delta(in.delta);
  if (in.delta_ci) SetInterval(in.delta_ci, out->mutable_delta_ci());
  out->set_verdict(in.verdict);
  out->set_text(in.text);
  out->set_worst_slice(in.worst_slice);
  out->set_worst_slice_delta(in.worst_slice_delta);
}

void SlicesToProto(const types::EvalResult& in, pb::EvalResult* out) {
  for (const types::SliceResult& s : in.slices) {
    pb::SliceResult* ps = out->add_slices();
    ps->set_kind(s.kind);
    ps->set_value(s.value);
    ps->set_samples(s.samples);
    ps->set_blocks(s.blocks);
    ps->set_accept_length(s.accept_length);
    ps->set_tau(s.tau);
    if (s.accept_length_ci) SetInterval(s.accept_length_ci, ps->mutable_accept_length_ci());
    if (s.tau_ci) SetInterval(s.tau_ci, ps->mutable_tau_ci());
  }
  out->set_loop_token_share(in.loop_token_share);
  out->set_loop_accept_share(in.loop_accept_share);
}

void SettingToProto(const types::SamplingSetting& s, pb::SamplingSetting* out) {
  out->set_temperature(s.temperature);
  out->set_top_p(s.top_p);
  out->set_top_k(static_cast<int32_t>(s.top_k));
  if (s.policy != types::ProposalPolicy::kDefault) out->set_policy(types::PolicyName(s.policy));
  out->set_engine(s.engine);
  out->set_target_only_truncation(!s.truncate_draft);
}

// The draft-length curve, sampled acceptance and target consistency.
void SampledToProto(const types::EvalResult& in, pb::EvalResult* out) {
  for (double v : in.draft_length_curve) out->add_draft_length_curve(v);
  for (const types::SampledAcceptance& s : in.sampling) {
    pb::SampledAcceptance* ps = out->add_sampling();
    SettingToProto(s.setting, ps->mutable_setting());
    for (double a : s.mean_alpha) ps->add_mean_alpha(a);
    for (int64_t c : s.counted) ps->add_counted(c);
    ps->set_expected_accept_length_pooled(s.expected_accept_length_pooled);
    ps->set_expected_tau(s.expected_tau);
    for (double v : s.draft_length_curve) ps->add_draft_length_curve(v);
    for (double v : s.marginal_accept) ps->add_marginal_accept(v);
    for (double v : s.histogram) ps->add_histogram(v);
    if (s.accept_length_ci) SetInterval(s.accept_length_ci, ps->mutable_accept_length_ci());
    for (const std::string& a : s.approximations) ps->add_approximations(a);
    ps->set_greedy_equivalent(s.greedy_equivalent);
  }
  if (in.target_consistency.positions > 0) {
    ToProto(in.target_consistency, out->mutable_target_consistency());
  }
}

void PositionToProto(const types::PositionMetrics& p, pb::PositionMetrics* pp) {
  pp->set_position(p.position);
  pp->set_counted(p.counted);
  pp->set_correct(p.correct);
  pp->set_accuracy(p.accuracy);
  pp->set_accepted(p.accepted);
  pp->set_acceptance(p.acceptance);
  pp->set_conditional_counted(p.conditional_counted);
  pp->set_conditional(p.conditional);
  pp->set_mean_cross_entropy(p.mean_cross_entropy);
  pp->set_unary_correct(p.unary_correct);
  pp->set_unary_accuracy(p.unary_accuracy);
  pp->set_covered(p.covered);
  pp->set_coverage(p.coverage);
  pp->set_tf_correct(p.tf_correct);
  pp->set_tf_accuracy(p.tf_accuracy);
  if (p.accuracy_ci) SetInterval(p.accuracy_ci, pp->mutable_accuracy_ci());
  if (p.acceptance_ci) SetInterval(p.acceptance_ci, pp->mutable_acceptance_ci());
  if (p.conditional_ci) SetInterval(p.conditional_ci, pp->mutable_conditional_ci());
  pp->set_unavailable(p.counted == 0);
}

void SampleToProto(const types::SampleSummary& s, pb::SampleSummary* ps) {
  ps->set_sample_index(static_cast<int32_t>(s.sample_index));
  ps->set_blocks(static_cast<int32_t>(s.blocks));
  ps->set_mean_accept_length(s.mean_accept_length);
  ps->set_length(static_cast<int32_t>(s.length));
  ps->set_first_response_position(static_cast<int32_t>(s.first_response_position));
  ps->set_accepted_total(s.accepted_total);
  for (int64_t v : s.counted) ps->add_counted(v);
  for (int64_t v : s.correct) ps->add_correct(v);
  for (int64_t v : s.accepted) ps->add_accepted(v);
  for (int64_t v : s.conditional_counted) ps->add_conditional_counted(v);
  ps->set_response_tokens(s.response_tokens);
  ps->set_loop_tokens(s.loop_tokens);
  ps->set_loop_blocks(s.loop_blocks);
  ps->set_loop_accepted_total(s.loop_accepted_total);
  for (int64_t v : s.context_blocks) ps->add_context_blocks(v);
  for (int64_t v : s.context_accepted) ps->add_context_accepted(v);
  ps->set_category(s.category);
  ps->set_language(s.language);
  ps->set_thinking(s.thinking);
}

void ShardToProto(const types::ShardPlacement& sh, pb::ShardPlacement* p) {
  p->set_first(sh.first);
  p->set_end(sh.end);
  p->set_blocks(sh.blocks);
  p->set_device(sh.device);
  p->set_server(sh.server);
  p->set_bytes_read(sh.bytes_read);
  p->set_seconds(sh.seconds);
}

// The wire's one convention (top_p 0 = off); ranges, policies and presets
// are eval/sampling_policy.h's, checked at submit and at run.
types::SamplingSetting SettingFromProto(const pb::SamplingSetting& in) {
  types::SamplingSetting s;
  s.temperature = in.temperature();
  s.top_p = in.top_p() == 0 ? 1.0 : in.top_p();
  s.top_k = in.top_k();
  return s;
}

// The mode and the anchor strategy (unspecified: anchor, even).
absl::Status ModeFromProto(const pb::EvalRequest& in, types::EvalOptions& o) {
  switch (in.mode()) {
    case pb::EVAL_MODE_UNSPECIFIED:
    case pb::EVAL_MODE_ANCHOR: o.mode = types::Mode::kAnchor; break;
    case pb::EVAL_MODE_REPLAY: o.mode = types::Mode::kReplay; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("mode ", static_cast<int>(in.mode()), " is not anchor or replay"));
  }
  switch (in.anchors()) {
    case pb::ANCHOR_STRATEGY_UNSPECIFIED:
    case pb::ANCHOR_STRATEGY_EVEN: o.anchors = types::AnchorStrategy::kEven; break;
    case pb::ANCHOR_STRATEGY_RANDOM: o.anchors = types::AnchorStrategy::kRandom; break;
    case pb::ANCHOR_STRATEGY_ALL: o.anchors = types::AnchorStrategy::kAll; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("anchors ", static_cast<int>(in.anchors()), " is not even, random or all"));
  }
  return absl::OkStatus();
}

// The intervals (ci, ci_resamples) and the shards, each within its range.
absl::Status IntervalsAndShardsFromProto(const pb::EvalRequest& in, types::EvalOptions& o) {
  if (in.ci() == "none") {
    o.ci = types::CiMethod::kNone;
  } else if (!in.ci().empty() && in.ci() != "bootstrap") {
    return absl::InvalidArgumentError(
        absl::StrCat("ci must be bootstrap or none (empty = bootstrap); got '", in.ci(), "'"));
  }
  RETURN_IF_ERROR(NonNegative("ci_resamples", in.ci_resamples()));
  if (in.ci_resamples() > kMaxCiResamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("ci_resamples must be <= ", kMaxCiResamples, "; got ", in.ci_resamples()));
  }
  if (in.ci_resamples() > 0) o.ci_resamples = in.ci_resamples();
  RETURN_IF_ERROR(NonNegative("shards", in.shards()));
  constexpr int kMaxShards = 4096;
  if (in.shards() > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards must be <= ", kMaxShards, "; got ", in.shards()));
  }
  o.shards = in.shards();
  return absl::OkStatus();
}

}  // namespace

void ToProto(const types::TargetConsistency& in, pb::TargetConsistency* out) {
  out->set_positions(in.positions);
  out->set_matches(in.matches);
  out->set_fraction(in.fraction);
  out->set_norm_applied(in.norm_applied);
}

void ToProto(const types::EvalResult& in, pb::EvalResult* out) {
  out->set_mode(in.mode == types::Mode::kAnchor ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
  out->set_block_size(static_cast<int32_t>(in.block_size));
  out->set_samples(in.samples);
  out->set_blocks(in.blocks);
  out->set_tokens_scored(in.tokens_scored);
  out->set_draft_vocab_size(in.draft_vocab_size);
  out->set_labels_in_draft_vocab(in.labels_in_draft_vocab);
  out->set_accept_length_pooled(in.accept_length_pooled);
  out->set_tau(in.tau);
  for (const types::PositionMetrics& p : in.positions) PositionToProto(p, out->add_positions());
  for (int64_t h : in.accepted_histogram) out->add_accepted_histogram(h);
  for (const types::SampleSummary& x : in.per_sample) SampleToProto(x, out->add_per_sample());
  out->set_setup_seconds(in.setup_seconds);
  out->set_compute_seconds(in.compute_seconds);
  out->set_tokens_per_second(in.tokens_per_second);
  out->set_device(in.device);
  out->set_dtype(in.dtype);
  out->set_drafter_fingerprint(in.drafter_fingerprint);
  out->set_dataset_fingerprint(in.dataset_fingerprint);
  out->set_target_fingerprint(in.target_fingerprint);
  for (const auto& w : in.warnings) out->add_warnings(w);
  out->set_family(in.family);
  out->set_semantics(in.semantics);
  out->set_semantics_reference(in.semantics_reference);
  out->set_selector_top_k(static_cast<int32_t>(in.selector_top_k));
  out->set_unary_accept_length_pooled(in.unary_accept_length_pooled);
  out->set_oracle_accept_length_pooled(in.oracle_accept_length_pooled);
  if (in.selector_top_k > 0) {
    pb::FirstMissSplit* f = out->mutable_first_miss();
    f->set_all_accepted(in.first_miss.all_accepted);
    f->set_coverage_miss(in.first_miss.coverage_miss);
    f->set_ranking_error(in.first_miss.ranking_error);
  }
  out->set_selector_near_ties(in.selector_near_ties);
  out->set_positions_to_first_miss(in.positions_to_first_miss);
  out->set_context_positions(in.context_positions);
  for (const types::ShardPlacement& sh : in.shards) ShardToProto(sh, out->add_shards());
  SampledToProto(in, out);
  SlicesToProto(in, out);
  if (in.accept_length_ci) SetInterval(in.accept_length_ci, out->mutable_accept_length_ci());
  if (in.tau_ci) SetInterval(in.tau_ci, out->mutable_tau_ci());
  out->set_ci_resamples(static_cast<int32_t>(in.ci_resamples));
  if (in.gate) GateToProto(*in.gate, out->mutable_gate());
  out->set_suite(in.suite);
  for (const types::DatasetResult& d : in.suite_results) {
    pb::DatasetResult* pd = out->add_suite_results();
    pd->set_dataset(d.dataset);
    ToProto(d.result, pd->mutable_result());
  }
}

absl::StatusOr<types::EvalParams> FromProto(const pb::EvalRequest& in) {
  types::EvalParams p;
  RETURN_IF_ERROR(CheckName("drafter", in.drafter()));
  RETURN_IF_ERROR(CheckName("dataset", in.dataset()));
  RETURN_IF_ERROR(CheckName("target", in.target()));
  p.drafter = in.drafter();
  p.checkpoint_path = in.checkpoint_path();
  p.dataset = in.dataset();
  p.target = in.target();
  types::EvalOptions& o = p.options;
  RETURN_IF_ERROR(ModeFromProto(in, o));
  for (auto [field, v] : {std::pair<const char*, int64_t>{"max_samples", in.max_samples()},
                          {"max_blocks", in.max_blocks()},
                          {"block_size", in.block_size()},
                          {"max_new_tokens", in.max_new_tokens()}}) {
    RETURN_IF_ERROR(NonNegative(field, v));
  }
  o.max_samples = in.max_samples();
  o.max_blocks = in.max_blocks();
  o.seed = in.seed();
  o.block_size = in.block_size();
  o.max_new_tokens = in.max_new_tokens();
  auto semantics = types::ParseSemantics(in.semantics());
  if (!semantics.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("semantics must be zlab-current or zlab-2025 (empty = zlab-current); got '",
                     in.semantics(), "'"));
  }
  o.semantics = *semantics;
  if (in.metrics().empty() || in.metrics() == "all") {
    o.metrics = types::MetricSet::kAll;
  } else if (in.metrics() == "acceptance") {
    o.metrics = types::MetricSet::kAcceptance;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics must be all or acceptance (empty = all); got '", in.metrics(), "'"));
  }
  o.full_positions = in.full_positions();
  constexpr int kMaxSamplingSettings = 16;
  if (in.sampling_size() > kMaxSamplingSettings) {
    return absl::InvalidArgumentError(absl::StrCat("sampling has ", in.sampling_size(),
                                                   " settings; at most ", kMaxSamplingSettings));
  }
  for (const pb::SamplingSetting& s : in.sampling()) o.sampling.push_back(SettingFromProto(s));
  for (const std::string& name : in.policies()) {
    ASSIGN_OR_RETURN(types::ProposalPolicy policy, types::ParsePolicy(name));
    o.policies.push_back(policy);
  }
  o.engine = in.engine();
  RETURN_IF_ERROR(IntervalsAndShardsFromProto(in, o));
  return p;
}

}  // namespace dflash::service
