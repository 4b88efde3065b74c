#include "core/eval_core_impl.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/device.h"
#include "dflash/build_info.h"

namespace dflash::core {

const char* ResourceKindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kTarget: return "target";
    case ResourceKind::kDrafter: return "drafter";
    case ResourceKind::kDataset: return "dataset";
  }
  return "?";
}

struct EvalCoreImpl::Resident {};

absl::StatusOr<std::unique_ptr<EvalCoreImpl>> EvalCoreImpl::Create(CoreOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create state directory '", options.state_dir, "': ", ec.message()));
  }
  if (options.data_roots.empty()) {
    options.data_roots = {options.state_dir + "/models", options.state_dir + "/datasets"};
  }
  auto roots = DataRoots::Create(options.data_roots);
  if (!roots.ok()) return roots.status();
  return std::unique_ptr<EvalCoreImpl>(new EvalCoreImpl(std::move(options), *std::move(roots)));
}

EvalCoreImpl::EvalCoreImpl(CoreOptions options, DataRoots roots)
    : options_(std::move(options)),
      roots_(std::move(roots)),
      start_time_(std::chrono::system_clock::now()),
      start_steady_(std::chrono::steady_clock::now()),
      resident_(std::make_unique<Resident>()) {}

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
  info.default_dtype = default_dtype();
  info.intra_op_threads = options_.threads;
  info.blas = DescribeBlas();
  info.start_time_unix_micros = std::chrono::duration_cast<std::chrono::microseconds>(
      start_time_.time_since_epoch()).count();
  info.uptime_seconds = std::chrono::duration<double>(
      std::chrono::steady_clock::now() - start_steady_).count();
  info.data_roots = roots_.roots();
  info.state_dir = options_.state_dir;
  return info;
}

absl::StatusOr<weights::WeightReport> EvalCoreImpl::ValidateCheckpoint(const ValidateParams&) {
  return absl::UnimplementedError("ValidateCheckpoint is not implemented yet");
}
absl::StatusOr<LoadResult> EvalCoreImpl::LoadDrafter(const LoadDrafterParams&) {
  return absl::UnimplementedError("LoadDrafter is not implemented yet");
}
absl::StatusOr<LoadResult> EvalCoreImpl::LoadTarget(const LoadTargetParams&) {
  return absl::UnimplementedError("LoadTarget is not implemented yet");
}
absl::StatusOr<LoadResult> EvalCoreImpl::LoadDataset(const LoadDatasetParams&) {
  return absl::UnimplementedError("LoadDataset is not implemented yet");
}
absl::StatusOr<ResourceInfo> EvalCoreImpl::Unload(ResourceKind, const std::string&) {
  return absl::UnimplementedError("Unload is not implemented yet");
}
std::vector<ResourceInfo> EvalCoreImpl::ListResources(std::optional<ResourceKind>) const {
  return {};
}
absl::StatusOr<eval::EvalResult> EvalCoreImpl::RunEval(const EvalParams&,
                                                       const eval::ProgressFn&) {
  return absl::UnimplementedError("RunEval is not implemented yet");
}

}  // namespace dflash::core
