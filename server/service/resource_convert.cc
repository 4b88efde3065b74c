#include "service/resource_convert.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "resident/device.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "service/eval_convert.h"

namespace dflash::service {
namespace {

// LoadDataset's layer_ids: feature keys (one or two in practice) and layers
// over all keys (a target has at most a few hundred).
constexpr int kMaxFeatureKeys = 16;
constexpr int kMaxLayerIds = 1024;

pb::ResourceKind KindToProto(resident::ResourceKind kind) {
  switch (kind) {
    case resident::ResourceKind::kTarget: return pb::RESOURCE_KIND_TARGET;
    case resident::ResourceKind::kDrafter: return pb::RESOURCE_KIND_DRAFTER;
    case resident::ResourceKind::kDataset: return pb::RESOURCE_KIND_DATASET;
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

}  // namespace

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

absl::StatusOr<resident::ResourceKind> KindFromProto(pb::ResourceKind kind) {
  switch (kind) {
    case pb::RESOURCE_KIND_TARGET: return resident::ResourceKind::kTarget;
    case pb::RESOURCE_KIND_DRAFTER: return resident::ResourceKind::kDrafter;
    case pb::RESOURCE_KIND_DATASET: return resident::ResourceKind::kDataset;
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
  for (const resident::DeviceInfo& d : in.devices) {
    pb::DeviceInfo* pd = out->add_devices();
    pd->set_name(d.name);
    pd->set_description(d.description);
    pd->set_total_memory_bytes(d.total_memory_bytes);
    pd->set_used_memory_bytes(d.used_memory_bytes);
    pd->set_allocator_allocated_bytes(d.allocator_allocated_bytes);
    pd->set_allocator_reserved_bytes(d.allocator_reserved_bytes);
    pd->set_allocator_peak_allocated_bytes(d.allocator_peak_allocated_bytes);
    pd->set_allocator_peak_reserved_bytes(d.allocator_peak_reserved_bytes);
    pd->set_allocator_alloc_retries(d.allocator_alloc_retries);
    pd->set_allocator_ooms(d.allocator_ooms);
  }
  out->set_default_device(in.default_device);
  for (const std::string& d : in.eval_devices) out->add_eval_devices(d);
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

void ToProto(const resident::ResourceInfo& in, pb::Resource* out) {
  out->set_kind(KindToProto(in.kind));
  out->set_name(in.name);
  out->set_source_path(in.source_path);
  out->set_device(in.device);
  out->set_dtype(DTypeToProto(in.dtype));
  out->set_bytes(in.bytes);
  out->set_mapped_bytes(in.mapped_bytes);
  out->set_streamed(in.streamed);
  out->set_stream_bytes(in.stream_bytes);
  out->set_stream_budget_bytes(in.stream_budget_bytes);
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

void ToProto(const resident::LoadResult& in, pb::LoadResponse* out) {
  ToProto(in.resource, out->mutable_resource());
  if (in.report) ToProto(*in.report, out->mutable_report());
  out->set_reused(in.reused);
  for (const auto& w : in.warnings) out->add_warnings(w);
  for (const auto& f : in.facts) out->add_facts(f);
  if (!in.consistency_target.empty()) {
    ToProto(in.target_consistency, out->mutable_target_consistency());
    out->set_consistency_target(in.consistency_target);
  }
}

absl::StatusOr<resident::ValidateParams> FromProto(const pb::ValidateCheckpointRequest& in) {
  return resident::ValidateParams{in.path(), in.config_path(), in.allow_unexpected(),
                                  in.compute_stats()};
}

absl::StatusOr<resident::LoadDrafterParams> FromProto(const pb::LoadDrafterRequest& in) {
  resident::LoadDrafterParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  p.config_path = in.config_path();
  p.allow_unexpected = in.allow_unexpected();
  return p;
}

absl::StatusOr<resident::LoadTargetParams> FromProto(const pb::LoadTargetRequest& in) {
  resident::LoadTargetParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  p.load_final_norm = in.load_final_norm();
  return p;
}

absl::StatusOr<resident::LoadDatasetParams> FromProto(const pb::LoadDatasetRequest& in) {
  resident::LoadDatasetParams p;
  RETURN_IF_ERROR(LoadCommon(in, &p));
  RETURN_IF_ERROR(NonNegative("max_samples", in.max_samples()));
  p.max_samples = in.max_samples();
  p.skip_bad_samples = in.skip_bad_samples();
  RETURN_IF_ERROR(NonNegative("stream_budget_bytes", in.stream_budget_bytes()));
  p.stream = in.stream();
  p.stream_budget_bytes = in.stream_budget_bytes();
  RETURN_IF_ERROR(CheckName("target", in.target()));
  p.target = in.target();
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

void ToProto(const core::FleetMember& in, pb::FleetServer* out) {
  out->set_name(in.name);
  out->set_device(in.device);
  out->set_device_description(in.device_description);
  out->set_total_memory_bytes(in.total_memory_bytes);
  out->set_used_memory_bytes(in.used_memory_bytes);
  for (const std::string& n : in.targets) out->add_targets(n);
  for (const std::string& n : in.datasets) out->add_datasets(n);
  for (const std::string& n : in.drafters) out->add_drafters(n);
  for (const std::string& n : in.running_jobs) out->add_running_jobs(n);
  out->set_heartbeat_age_seconds(in.heartbeat_age_seconds);
}

}  // namespace dflash::service
