#include "service/proto_convert.h"

#include <google/protobuf/util/time_util.h>

#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "dflash/eval/v1/label_key.h"
#include "types/semantics.h"

namespace dflash::service {
namespace {

// Most labels one job may carry or one listing may filter on.
constexpr int kMaxLabels = 64;
// LoadDataset's layer_ids: feature keys (one or two in practice) and layers
// over all keys (a target has at most a few hundred).
constexpr int kMaxFeatureKeys = 16;
constexpr int kMaxLayerIds = 1024;

google::protobuf::Timestamp FromUnixMicros(int64_t micros) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(micros);
}

pb::ResourceKind KindToProto(core::ResourceKind kind) {
  switch (kind) {
    case core::ResourceKind::kTarget: return pb::RESOURCE_KIND_TARGET;
    case core::ResourceKind::kDrafter: return pb::RESOURCE_KIND_DRAFTER;
    case core::ResourceKind::kDataset: return pb::RESOURCE_KIND_DATASET;
  }
  return pb::RESOURCE_KIND_UNSPECIFIED;
}

pb::TensorEntry::Status EntryStatusToProto(weights::EntryStatus s) {
  switch (s) {
    case weights::EntryStatus::kFound: return pb::TensorEntry::STATUS_FOUND;
    case weights::EntryStatus::kMissing: return pb::TensorEntry::STATUS_MISSING;
    case weights::EntryStatus::kShapeMismatch: return pb::TensorEntry::STATUS_SHAPE_MISMATCH;
    case weights::EntryStatus::kDtypeMismatch: return pb::TensorEntry::STATUS_DTYPE_MISMATCH;
    case weights::EntryStatus::kUnexpected: return pb::TensorEntry::STATUS_UNEXPECTED;
    case weights::EntryStatus::kIgnored: return pb::TensorEntry::STATUS_IGNORED;
    case weights::EntryStatus::kOptionalAbsent: return pb::TensorEntry::STATUS_OPTIONAL_ABSENT;
  }
  return pb::TensorEntry::STATUS_UNSPECIFIED;
}

absl::Status NonNegative(absl::string_view field, int64_t value) {
  if (value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be >= 0; got ", value));
  }
  return absl::OkStatus();
}

// Label keys by the API's rule (label_key.h); values as names. At most
// kMaxLabels.
absl::Status CheckLabels(const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels has ", labels.size(), " entries; at most ", kMaxLabels, " are allowed"));
  }
  // Sorted, so the first bad label reported does not depend on hashing.
  const std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [key, value] : sorted) {
    if (!pb::IsValidLabelKey(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels key '", absl::CHexEscape(key),
                       "' is not 1 to 63 letters, digits, '_', '-', '.', '/'"));
    }
    RETURN_IF_ERROR(CheckName(absl::StrCat("labels['", key, "']"), value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckName(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is ", value.size(), " bytes long; at most ", kMaxNameBytes, " are allowed"));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(absl::StrCat(field, " contains control character ",
                                                     absl::StrFormat("0x%02x", c), " at byte ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckId(absl::string_view field, absl::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  return CheckName(field, value);
}

absl::StatusOr<std::string> DTypeFromProto(pb::DType dtype) {
  switch (dtype) {
    case pb::DTYPE_UNSPECIFIED: return std::string();
    case pb::DTYPE_FP32: return std::string("fp32");
    case pb::DTYPE_FP16: return std::string("fp16");
    case pb::DTYPE_BF16: return std::string("bf16");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("dtype ", static_cast<int>(dtype),
                       " is not a DType: 0 (the default), 1 (fp32), 2 (fp16) or 3 (bf16)"));
  }
}

pb::DType DTypeToProto(const std::string& dtype) {
  if (dtype == "fp32") return pb::DTYPE_FP32;
  if (dtype == "fp16") return pb::DTYPE_FP16;
  if (dtype == "bf16") return pb::DTYPE_BF16;
  return pb::DTYPE_UNSPECIFIED;
}

absl::StatusOr<core::ResourceKind> KindFromProto(pb::ResourceKind kind) {
  switch (kind) {
    case pb::RESOURCE_KIND_TARGET: return core::ResourceKind::kTarget;
    case pb::RESOURCE_KIND_DRAFTER: return core::ResourceKind::kDrafter;
    case pb::RESOURCE_KIND_DATASET: return core::ResourceKind::kDataset;
    default:
      return absl::InvalidArgumentError(absl::StrCat("resource kind ", static_cast<int>(kind),
                                                     " is not one of target, drafter, dataset"));
  }
}

void ToProto(const core::ServerInfo& in, pb::ServerInfo* out) {
  out->set_server_version(in.server_version);
  out->set_git_sha(in.git_sha);
  out->set_libtorch_version(in.libtorch_version);
  out->set_cuda_available(in.cuda_available);
  for (const core::DeviceInfo& d : in.devices) {
    pb::DeviceInfo* pd = out->add_devices();
    pd->set_name(d.name);
    pd->set_description(d.description);
    pd->set_total_memory_bytes(d.total_memory_bytes);
    pd->set_used_memory_bytes(d.used_memory_bytes);
  }
  out->set_default_device(in.default_device);
  out->set_default_dtype(DTypeToProto(in.default_dtype));
  out->set_intra_op_threads(in.intra_op_threads);
  out->set_blas(in.blas);
  *out->mutable_start_time() = FromUnixMicros(in.start_time_unix_micros);
  out->set_uptime_seconds(in.uptime_seconds);
  out->set_resident_targets(in.resident_targets);
  out->set_resident_drafters(in.resident_drafters);
  out->set_resident_datasets(in.resident_datasets);
  out->set_queued_jobs(in.queued_jobs);
  out->set_running_jobs(in.running_jobs);
  for (const std::string& r : in.data_roots) out->add_data_roots(r);
  out->set_state_dir(in.state_dir);
}

void ToProto(const core::ResourceInfo& in, pb::Resource* out) {
  out->set_kind(KindToProto(in.kind));
  out->set_name(in.name);
  out->set_source_path(in.source_path);
  out->set_device(in.device);
  out->set_dtype(DTypeToProto(in.dtype));
  out->set_bytes(in.bytes);
  out->set_fingerprint(in.fingerprint);
  *out->mutable_load_time() = FromUnixMicros(in.load_time_unix_micros);
  out->set_load_seconds(in.load_seconds);
  out->set_summary(in.summary);
}

void ToProto(const weights::WeightReport& in, pb::WeightReport* out) {
  out->set_path(in.path);
  out->set_format(in.format);
  out->set_config_path(in.config_path);
  out->set_ok(in.ok);
  out->set_stripped_prefix(in.stripped_prefix);
  out->set_found(in.found);
  out->set_missing(in.missing);
  out->set_shape_mismatches(in.shape_mismatches);
  out->set_dtype_mismatches(in.dtype_mismatches);
  out->set_unexpected(in.unexpected);
  out->set_ignored(in.ignored);
  for (const auto& s : in.problems) out->add_problems(s);
  for (const auto& s : in.facts) out->add_facts(s);
  for (const auto& s : in.skipped_entries) out->add_skipped_entries(s);
  for (const weights::TensorEntry& t : in.tensors) {
    pb::TensorEntry* pt = out->add_tensors();
    pt->set_name(t.name);
    pt->set_stored_name(t.stored_name);
    pt->set_status(EntryStatusToProto(t.status));
    pt->set_dtype(t.dtype);
    for (int64_t d : t.shape) pt->add_shape(d);
    for (int64_t d : t.expected_shape) pt->add_expected_shape(d);
    pt->set_source_file(t.source_file);
    pt->set_reason(t.reason);
    if (t.has_stats) {
      pb::TensorStats* ps = pt->mutable_stats();
      ps->set_mean(t.stats.mean);
      ps->set_std(t.stats.std);
      ps->set_abs_max(t.stats.abs_max);
      ps->set_nan_count(t.stats.nan_count);
      ps->set_inf_count(t.stats.inf_count);
      ps->set_all_zero(t.stats.all_zero);
    }
  }
  out->set_fingerprint(in.fingerprint);
  out->set_tensor_bytes(in.tensor_bytes);
}

void ToProto(const core::LoadResult& in, pb::LoadResponse* out) {
  ToProto(in.resource, out->mutable_resource());
  if (in.report) ToProto(*in.report, out->mutable_report());
  out->set_reused(in.reused);
  for (const auto& w : in.warnings) out->add_warnings(w);
  for (const auto& f : in.facts) out->add_facts(f);
}

void ToProto(const eval::EvalResult& in, pb::EvalResult* out) {
  out->set_mode(in.mode == eval::Mode::kAnchor ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
  out->set_block_size(static_cast<int32_t>(in.block_size));
  out->set_samples(in.samples);
  out->set_blocks(in.blocks);
  out->set_tokens_scored(in.tokens_scored);
  out->set_accept_length_pooled(in.accept_length_pooled);
  out->set_tau(in.tau);
  for (const eval::PositionMetrics& p : in.positions) {
    pb::PositionMetrics* pp = out->add_positions();
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
  }
  for (int64_t h : in.accepted_histogram) out->add_accepted_histogram(h);
  for (const eval::SampleSummary& s : in.per_sample) {
    pb::SampleSummary* ps = out->add_per_sample();
    ps->set_sample_index(static_cast<int32_t>(s.sample_index));
    ps->set_blocks(static_cast<int32_t>(s.blocks));
    ps->set_mean_accept_length(s.mean_accept_length);
    ps->set_length(static_cast<int32_t>(s.length));
    ps->set_first_response_position(static_cast<int32_t>(s.first_response_position));
  }
  out->set_setup_seconds(in.setup_seconds);
  out->set_compute_seconds(in.compute_seconds);
  out->set_tokens_per_second(in.tokens_per_second);
  out->set_device(in.device);
  out->set_dtype(in.dtype);
  out->set_drafter_fingerprint(in.drafter_fingerprint);
  out->set_dataset_fingerprint(in.dataset_fingerprint);
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
}

absl::StatusOr<core::ValidateParams> FromProto(const pb::ValidateCheckpointRequest& in) {
  return core::ValidateParams{in.path(), in.config_path(), in.allow_unexpected(),
                              in.compute_stats()};
}

// The fields every load request has: name, path, dtype and device.
template <typename Request, typename Params>
absl::Status LoadCommon(const Request& in, Params* p) {
  RETURN_IF_ERROR(CheckName("name", in.name()));
  p->name = in.name();
  p->path = in.path();
  ASSIGN_OR_RETURN(p->dtype, DTypeFromProto(in.dtype()));
  RETURN_IF_ERROR(CheckName("device", in.device()));
  p->device = in.device();
  return absl::OkStatus();
}

absl::StatusOr<core::LoadDrafterParams> FromProto(const pb::LoadDrafterRequest& in) {
  core::LoadDrafterParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  p.config_path = in.config_path();
  p.allow_unexpected = in.allow_unexpected();
  return p;
}

absl::StatusOr<core::LoadTargetParams> FromProto(const pb::LoadTargetRequest& in) {
  core::LoadTargetParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  p.load_final_norm = in.load_final_norm();
  return p;
}

absl::StatusOr<core::LoadDatasetParams> FromProto(const pb::LoadDatasetRequest& in) {
  core::LoadDatasetParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  RETURN_IF_ERROR(NonNegative("max_samples", in.max_samples()));
  p.max_samples = in.max_samples();
  p.skip_bad_samples = in.skip_bad_samples();
  if (in.layer_ids_size() > kMaxFeatureKeys) {
    return absl::InvalidArgumentError(absl::StrCat("layer_ids has ", in.layer_ids_size(),
                                                   " feature keys; at most ", kMaxFeatureKeys,
                                                   " are allowed"));
  }
  int64_t total = 0;
  for (const auto& [key, ids] : in.layer_ids()) {
    RETURN_IF_ERROR(CheckName("layer_ids key", key));
    total += ids.ids_size();
    p.layer_ids[key] = std::vector<int>(ids.ids().begin(), ids.ids().end());
  }
  if (total > kMaxLayerIds) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_ids lists ", total, " layers; at most ", kMaxLayerIds, " are allowed"));
  }
  return p;
}

absl::StatusOr<core::EvalParams> FromProto(const pb::EvalRequest& in) {
  core::EvalParams p;
  RETURN_IF_ERROR(CheckName("drafter", in.drafter()));
  RETURN_IF_ERROR(CheckName("dataset", in.dataset()));
  RETURN_IF_ERROR(CheckName("target", in.target()));
  p.drafter = in.drafter();
  p.checkpoint_path = in.checkpoint_path();
  p.dataset = in.dataset();
  p.target = in.target();
  eval::EvalOptions& o = p.options;
  switch (in.mode()) {
    case pb::EVAL_MODE_UNSPECIFIED:
    case pb::EVAL_MODE_ANCHOR: o.mode = eval::Mode::kAnchor; break;
    case pb::EVAL_MODE_REPLAY: o.mode = eval::Mode::kReplay; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("mode ", static_cast<int>(in.mode()), " is not anchor or replay"));
  }
  switch (in.anchors()) {
    case pb::ANCHOR_STRATEGY_UNSPECIFIED:
    case pb::ANCHOR_STRATEGY_EVEN: o.anchors = eval::AnchorStrategy::kEven; break;
    case pb::ANCHOR_STRATEGY_RANDOM: o.anchors = eval::AnchorStrategy::kRandom; break;
    case pb::ANCHOR_STRATEGY_ALL: o.anchors = eval::AnchorStrategy::kAll; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("anchors ", static_cast<int>(in.anchors()), " is not even, random or all"));
  }
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
  auto semantics = model::ParseSemantics(in.semantics());
  if (!semantics.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("semantics must be zlab-current or zlab-2025 (empty = zlab-current); got '",
                     in.semantics(), "'"));
  }
  o.semantics = *semantics;
  return p;
}

pb::JobState JobStateToProto(jobs::JobState state) {
  switch (state) {
    case jobs::JobState::kQueued: return pb::JOB_STATE_QUEUED;
    case jobs::JobState::kRunning: return pb::JOB_STATE_RUNNING;
    case jobs::JobState::kSucceeded: return pb::JOB_STATE_SUCCEEDED;
    case jobs::JobState::kFailed: return pb::JOB_STATE_FAILED;
    case jobs::JobState::kCancelled: return pb::JOB_STATE_CANCELLED;
    case jobs::JobState::kInterrupted: return pb::JOB_STATE_INTERRUPTED;
  }
  return pb::JOB_STATE_UNSPECIFIED;
}

absl::StatusOr<jobs::JobRequest> JobRequestFromProto(const pb::EvalRequest& in) {
  auto params = FromProto(in);
  if (!params.ok()) return params.status();
  RETURN_IF_ERROR(CheckName("run", in.run()));
  RETURN_IF_ERROR(NonNegative("step", in.step()));
  RETURN_IF_ERROR(CheckLabels(in.labels()));
  jobs::JobRequest r;
  r.params = *std::move(params);
  r.run = in.run();
  r.step = in.step();
  r.labels = std::map<std::string, std::string>(in.labels().begin(), in.labels().end());
  r.unload_after = in.unload_after();
  return r;
}

void ToProto(const jobs::JobRequest& in, pb::EvalRequest* out) {
  out->set_drafter(in.params.drafter);
  out->set_checkpoint_path(in.params.checkpoint_path);
  out->set_dataset(in.params.dataset);
  out->set_target(in.params.target);
  const eval::EvalOptions& o = in.params.options;
  out->set_mode(o.mode == eval::Mode::kAnchor ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
  out->set_max_samples(static_cast<int32_t>(o.max_samples));
  out->set_max_blocks(static_cast<int32_t>(o.max_blocks));
  switch (o.anchors) {
    case eval::AnchorStrategy::kEven: out->set_anchors(pb::ANCHOR_STRATEGY_EVEN); break;
    case eval::AnchorStrategy::kRandom: out->set_anchors(pb::ANCHOR_STRATEGY_RANDOM); break;
    case eval::AnchorStrategy::kAll: out->set_anchors(pb::ANCHOR_STRATEGY_ALL); break;
  }
  out->set_seed(o.seed);
  out->set_block_size(static_cast<int32_t>(o.block_size));
  out->set_max_new_tokens(static_cast<int32_t>(o.max_new_tokens));
  out->set_semantics(model::SemanticsName(o.semantics));
  out->set_run(in.run);
  out->set_step(in.step);
  for (const auto& [k, v] : in.labels) (*out->mutable_labels())[k] = v;
  out->set_unload_after(in.unload_after);
}

void ToProto(const jobs::JobRecord& in, pb::EvalJob* out) {
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
  }
  out->set_error_code(in.error_code);
  out->set_error_message(in.error_message);
  if (in.create_unix_micros) *out->mutable_create_time() = FromUnixMicros(in.create_unix_micros);
  if (in.start_unix_micros) *out->mutable_start_time() = FromUnixMicros(in.start_unix_micros);
  if (in.end_unix_micros) *out->mutable_end_time() = FromUnixMicros(in.end_unix_micros);
  out->set_server_version(in.server_version);
  out->set_interrupted_by_restart(in.interrupted_by_restart);
  out->set_resubmitted_from(in.resubmitted_from);
}

absl::StatusOr<jobs::ListQuery> FromProto(const pb::ListEvalsRequest& in) {
  jobs::ListQuery q;
  switch (in.state()) {
    case pb::JOB_STATE_UNSPECIFIED: break;
    case pb::JOB_STATE_QUEUED: q.state = jobs::JobState::kQueued; break;
    case pb::JOB_STATE_RUNNING: q.state = jobs::JobState::kRunning; break;
    case pb::JOB_STATE_SUCCEEDED: q.state = jobs::JobState::kSucceeded; break;
    case pb::JOB_STATE_FAILED: q.state = jobs::JobState::kFailed; break;
    case pb::JOB_STATE_CANCELLED: q.state = jobs::JobState::kCancelled; break;
    case pb::JOB_STATE_INTERRUPTED: q.state = jobs::JobState::kInterrupted; break;
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

void ToProto(const core::Comparison& in, pb::CompareEvalsResponse* out) {
  for (const jobs::JobRecord& j : in.jobs) ToProto(j, out->add_jobs());
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
}

}  // namespace dflash::service
