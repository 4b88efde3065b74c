// File: fake_eval_core.h
// An EvalCore whose answers the test sets, and which records what it was
// asked: service tests check the proto <-> core translation and the status
// mapping without tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/eval_core.h"

namespace dflash::testing {

class FakeEvalCore : public core::EvalCore {
 public:
  core::ServerInfo info;
  absl::Status next_error = absl::OkStatus();  // returned by every fallible call when set
  core::LoadResult load_result;
  weights::WeightReport report;
  types::EvalResult eval_result;
  std::vector<core::ResourceInfo> resources;

  // What the last calls received.
  core::LoadDrafterParams last_drafter;
  core::LoadDatasetParams last_dataset;
  types::EvalParams last_eval;

  core::ServerInfo GetServerInfo() const override { return info; }
  absl::StatusOr<weights::WeightReport> ValidateCheckpoint(const core::ValidateParams&) override {
    if (!next_error.ok()) return next_error;
    return report;
  }
  absl::StatusOr<core::LoadResult> LoadDrafter(const core::LoadDrafterParams& p) override {
    last_drafter = p;
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<core::LoadResult> LoadTarget(const core::LoadTargetParams&) override {
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<core::LoadResult> LoadDataset(const core::LoadDatasetParams& p) override {
    last_dataset = p;
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<core::ResourceInfo> Unload(core::ResourceKind kind,
                                            const std::string& name) override {
    if (!next_error.ok()) return next_error;
    core::ResourceInfo r;
    r.kind = kind;
    r.name = name;
    return r;
  }
  std::vector<core::ResourceInfo> ListResources(
      std::optional<core::ResourceKind> kind) const override {
    std::vector<core::ResourceInfo> out;
    for (const auto& r : resources) {
      if (!kind || r.kind == *kind) out.push_back(r);
    }
    return out;
  }
  absl::StatusOr<types::EvalResult> RunEval(const types::EvalParams& p,
                                            const types::ProgressFn&) override {
    last_eval = p;
    if (!next_error.ok()) return next_error;
    return eval_result;
  }
};

}  // namespace dflash::testing
