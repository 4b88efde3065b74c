#include "service/eval_convert.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "service/field_proto.h"
#include "types/proposal_policy.h"
#include "types/semantics.h"

namespace dflash::service {
namespace {

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
  // o.shards came with the table's fields; its range is checked here.
  RETURN_IF_ERROR(NonNegative("shards", in.shards()));
  constexpr int kMaxShards = 4096;
  if (in.shards() > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards must be <= ", kMaxShards, "; got ", in.shards()));
  }
  return absl::OkStatus();
}

}  // namespace

void ToProto(const types::TargetConsistency& in, pb::TargetConsistency* out) {
  StructToProto(in, *out);
}

// The table's fields (types/eval_result_fields.h) by reflection, then the
// ones it leaves to hand code: the mode enum, the first-miss split and the
// target consistency (set only when computed, so a DFlash 1 result or one
// without sampled numbers has none) and a suite's results, one level down.
// A position nobody reached is marked unavailable (its rates are not 0).
void ToProto(const types::EvalResult& in, pb::EvalResult* out) {
  StructToProto(in, *out);
  out->set_mode(in.mode == types::Mode::kAnchor ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
  if (in.selector_top_k > 0) {
    pb::FirstMissSplit* f = out->mutable_first_miss();
    f->set_all_accepted(in.first_miss.all_accepted);
    f->set_coverage_miss(in.first_miss.coverage_miss);
    f->set_ranking_error(in.first_miss.ranking_error);
  }
  if (in.target_consistency.positions > 0) {
    ToProto(in.target_consistency, out->mutable_target_consistency());
  }
  for (pb::PositionMetrics& p : *out->mutable_positions()) p.set_unavailable(p.counted() == 0);
  for (const types::DatasetResult& d : in.suite_results) {
    pb::DatasetResult* pd = out->add_suite_results();
    pd->set_dataset(d.dataset);
    ToProto(d.result, pd->mutable_result());
  }
}

// The tables' fields (types/eval_options_fields.h) by reflection, checked
// in table order (the names, then after the mode the counts), then the ones
// they leave to hand code, each with its own check.
absl::StatusOr<types::EvalParams> FromProto(const pb::EvalRequest& in) {
  types::EvalParams p;
  StructFromProto(in, p);
  RETURN_IF_ERROR(CheckFields(p));
  types::EvalOptions& o = p.options;
  StructFromProto(in, o);
  RETURN_IF_ERROR(ModeFromProto(in, o));
  RETURN_IF_ERROR(CheckFields(o));
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
  RETURN_IF_ERROR(IntervalsAndShardsFromProto(in, o));
  return p;
}

}  // namespace dflash::service
