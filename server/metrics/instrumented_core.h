// File: instrumented_core.h
// An EvalCore that forwards every call to another and reports loads and
// evaluations (duration, outcome, blocks and tokens) to ServerMetrics. Hand
// it to everything that calls the core so every evaluation is counted.
#pragma once

#include "core/eval_core.h"
#include "metrics/server_metrics.h"

namespace dflash::metrics {

class InstrumentedCore final : public core::EvalCore {
 public:
  // Both must outlive this object.
  InstrumentedCore(core::EvalCore& inner, ServerMetrics& metrics)
      : inner_(inner), metrics_(metrics) {}

  core::ServerInfo GetServerInfo() const override { return inner_.GetServerInfo(); }
  absl::StatusOr<weights::WeightReport> ValidateCheckpoint(
      const core::ValidateParams& params) override {
    return inner_.ValidateCheckpoint(params);
  }
  absl::StatusOr<core::LoadResult> LoadDrafter(const core::LoadDrafterParams& params) override;
  absl::StatusOr<core::LoadResult> LoadTarget(const core::LoadTargetParams& params) override;
  absl::StatusOr<core::LoadResult> LoadDataset(const core::LoadDatasetParams& params) override;
  absl::StatusOr<core::ResourceInfo> Unload(core::ResourceKind kind,
                                            const std::string& name) override {
    return inner_.Unload(kind, name);
  }
  std::vector<core::ResourceInfo> ListResources(
      std::optional<core::ResourceKind> kind) const override {
    return inner_.ListResources(kind);
  }
  absl::StatusOr<eval::EvalResult> RunEval(const core::EvalParams& params,
                                           const eval::ProgressFn& progress) override;

 private:
  core::EvalCore& inner_;
  ServerMetrics& metrics_;
};

}  // namespace dflash::metrics
