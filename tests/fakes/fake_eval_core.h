// File: fake_eval_core.h
// An EvalCore whose answers the test sets, and which records what it was
// asked: service tests check the proto <-> core translation and the status
// mapping without tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/eval_core.h"
#include "resident/load_request.h"
#include "resident/resource.h"

namespace dflash::testing {

class FakeEvalCore : public core::EvalCore {
 public:
  core::ServerInfo info;
  absl::Status next_error = absl::OkStatus();  // returned by every fallible call when set
  resident::LoadResult load_result;
  weights::WeightReport report;
  types::EvalResult eval_result;
  std::vector<resident::ResourceInfo> resources;

  // What the last calls received.
  resident::LoadDrafterParams last_drafter;
  resident::LoadDatasetParams last_dataset;
  types::EvalParams last_eval;

  core::ServerInfo GetServerInfo() const override { return info; }
  absl::StatusOr<weights::WeightReport> ValidateCheckpoint(
      const resident::ValidateParams&) override {
    if (!next_error.ok()) return next_error;
    return report;
  }
  absl::StatusOr<resident::LoadResult> LoadDrafter(const resident::LoadDrafterParams& p) override {
    last_drafter = p;
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<resident::LoadResult> LoadTarget(const resident::LoadTargetParams&) override {
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<resident::LoadResult> LoadDataset(const resident::LoadDatasetParams& p) override {
    last_dataset = p;
    if (!next_error.ok()) return next_error;
    return load_result;
  }
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override {
    if (!next_error.ok()) return next_error;
    resident::ResourceInfo r;
    r.kind = kind;
    r.name = name;
    return r;
  }
  std::vector<resident::ResourceInfo> ListResources(
      std::optional<resident::ResourceKind> kind) const override {
    std::vector<resident::ResourceInfo> out;
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
