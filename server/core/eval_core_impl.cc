#include "core/eval_core_impl.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/ops_observer.h"
#include "common/status_macros.h"
#include "core/device.h"
#include "core/eval_placement.h"
#include "core/resident.h"
#include "core/resident_pick.h"
#include "dflash/build_info.h"

namespace dflash::core {
namespace fs = std::filesystem;

const char* ResourceKindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kTarget: return "target";
    case ResourceKind::kDrafter: return "drafter";
    case ResourceKind::kDataset: return "dataset";
  }
  return "?";
}

using Clock = std::chrono::steady_clock;

absl::StatusOr<std::unique_ptr<EvalCoreImpl>> EvalCoreImpl::Create(CoreOptions options) {
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create state directory '", options.state_dir, "': ", ec.message()));
  }
  if (options.data_roots.empty()) {
    options.data_roots = {options.state_dir + "/models", options.state_dir + "/datasets"};
  }
  ASSIGN_OR_RETURN(DataRoots roots, DataRoots::Create(options.data_roots));
  return std::unique_ptr<EvalCoreImpl>(new EvalCoreImpl(std::move(options), std::move(roots)));
}

EvalCoreImpl::EvalCoreImpl(CoreOptions options, DataRoots roots)
    : options_(std::move(options)),
      roots_(std::move(roots)),
      start_time_(std::chrono::system_clock::now()),
      start_steady_(Clock::now()),
      resident_(std::make_unique<ResidentSet>()) {}

EvalCoreImpl::~EvalCoreImpl() = default;

std::string EvalCoreImpl::default_dtype() const {
  return options_.device == "cpu" ? "fp32" : "bf16";
}

ServerInfo EvalCoreImpl::GetServerInfo() const {
  ServerInfo info;
  info.server_version = kVersion;
  info.git_sha = kGitSha;
  info.libtorch_version = LibtorchVersion();
  info.cuda_available = CudaAvailable();
  info.devices = ListDevices(options_.threads);
  info.default_device = options_.device;
  info.eval_devices = SlotNames(options_.eval_devices);
  info.default_dtype = default_dtype();
  info.intra_op_threads = options_.threads;
  info.blas = DescribeBlas();
  info.start_time_unix_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(start_time_.time_since_epoch()).count();
  info.uptime_seconds = std::chrono::duration<double>(Clock::now() - start_steady_).count();
  info.data_roots = roots_.roots();
  info.state_dir = options_.state_dir;
  std::lock_guard<std::mutex> lock(resident_->mu);
  info.resident_targets = static_cast<int>(resident_->targets.size());
  info.resident_drafters = static_cast<int>(resident_->drafters.size());
  info.resident_datasets = static_cast<int>(resident_->datasets.size());
  for (DeviceInfo& d : info.devices) {
    auto add = [&d](const ResourceInfo& r) {
      if (r.device == d.name) d.used_memory_bytes += r.bytes;
    };
    for (const auto& [_, t] : resident_->targets) add(t.info);
    for (const auto& [_, t] : resident_->drafters) add(t.info);
    for (const auto& [_, t] : resident_->datasets) add(t.info);
  }
  return info;
}

std::vector<ResourceInfo> EvalCoreImpl::ListResources(std::optional<ResourceKind> kind) const {
  std::vector<ResourceInfo> out;
  std::lock_guard<std::mutex> lock(resident_->mu);
  auto want = [&kind](ResourceKind k) { return !kind || *kind == k; };
  if (want(ResourceKind::kTarget)) {
    for (const auto& [_, e] : resident_->targets) out.push_back(e.info);
  }
  if (want(ResourceKind::kDrafter)) {
    for (const auto& [_, e] : resident_->drafters) out.push_back(e.info);
  }
  if (want(ResourceKind::kDataset)) {
    for (const auto& [_, e] : resident_->datasets) out.push_back(e.info);
  }
  return out;
}

namespace {

// Removes `name` from `map` unless something (an evaluation) still holds it.
template <typename Map, typename Member>
absl::StatusOr<ResourceInfo> Erase(Map& map, const std::string& name, ResourceKind kind,
                                   Member member) {
  ASSIGN_OR_RETURN(auto it, PickEntry(map, name, kind));  // NotFound names the resident ones
  if ((it->second.*member).use_count() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(ResourceKindName(kind), " '", name,
                     "' is in use by a running evaluation; unload it when that finishes"));
  }
  ResourceInfo info = it->second.info;
  map.erase(it);
  return info;
}

}  // namespace

absl::StatusOr<ResourceInfo> EvalCoreImpl::Unload(ResourceKind kind, const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("unload: name is empty");
  std::lock_guard<std::mutex> lock(resident_->mu);
  switch (kind) {
    case ResourceKind::kTarget:
      return Erase(resident_->targets, name, kind, &ResidentSet::Target::tensors);
    case ResourceKind::kDrafter:
      return Erase(resident_->drafters, name, kind, &ResidentSet::Drafter::model);
    case ResourceKind::kDataset:
      return Erase(resident_->datasets, name, kind, &ResidentSet::Dataset::dataset);
  }
  return absl::InternalError("unknown resource kind");
}

// The public loads and RunEval time the work and report it to Ops().
namespace {

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::StatusOr<LoadResult> ReportLoad(ResourceKind kind, Clock::time_point start,
                                      absl::StatusOr<LoadResult> result) {
  if (!result.ok() || !result->reused) {  // a reused resident object was no load
    Ops().OnLoad(ResourceKindName(kind), result.status().code(), SecondsSince(start));
  }
  return result;
}

}  // namespace

absl::StatusOr<LoadResult> EvalCoreImpl::LoadDrafter(const LoadDrafterParams& params) {
  const Clock::time_point start = Clock::now();
  return ReportLoad(ResourceKind::kDrafter, start, DoLoadDrafter(params));
}

absl::StatusOr<LoadResult> EvalCoreImpl::LoadTarget(const LoadTargetParams& params) {
  const Clock::time_point start = Clock::now();
  return ReportLoad(ResourceKind::kTarget, start, DoLoadTarget(params));
}

absl::StatusOr<LoadResult> EvalCoreImpl::LoadDataset(const LoadDatasetParams& params) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<LoadResult> loaded = DoLoadDataset(params);
  // With a target: the pair's consistency (the dataset stays resident even
  // when this fails).
  if (loaded.ok() && !params.target.empty()) {
    const absl::Status s = AddTargetConsistency(params.target, *loaded);
    if (!s.ok()) loaded = s;
  }
  return ReportLoad(ResourceKind::kDataset, start, std::move(loaded));
}

absl::StatusOr<types::EvalResult> EvalCoreImpl::RunEval(const types::EvalParams& params,
                                                        const types::ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<types::EvalResult> result = DoRunEval(params, progress);
  const double seconds = SecondsSince(start);
  if (result.ok()) {
    const EvalCounts counts{result->blocks, result->tokens_scored, result->compute_seconds};
    Ops().OnEval(absl::StatusCode::kOk, seconds, &counts);
  } else {
    Ops().OnEval(result.status().code(), seconds, nullptr);
  }
  return result;
}

}  // namespace dflash::core
