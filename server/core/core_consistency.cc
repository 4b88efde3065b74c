// EvalCoreImpl's target-consistency steps: computed once per resident
// dataset and target fingerprint, reported by LoadDataset --target and
// required by evaluations that need the target's distribution.
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/eval_core_impl.h"
#include "core/resident.h"
#include "core/resident_pick.h"
#include "eval/target_consistency.h"

namespace dflash::core {

absl::StatusOr<types::TargetConsistency> EvalCoreImpl::TargetConsistencyOf(
    const std::string& dataset_name, const std::shared_ptr<const data::EvalDataset>& dataset,
    const std::shared_ptr<const weights::TargetTensors>& target) {
  {
    std::lock_guard<std::mutex> lock(resident_->mu);
    auto it = resident_->datasets.find(dataset_name);
    if (it != resident_->datasets.end() && it->second.dataset == dataset) {
      auto c = it->second.consistency.find(target->fingerprint);
      if (c != it->second.consistency.end()) return c->second;
    }
  }
  ASSIGN_OR_RETURN(types::TargetConsistency c, eval::ComputeTargetConsistency(*target, *dataset));
  std::lock_guard<std::mutex> lock(resident_->mu);
  auto it = resident_->datasets.find(dataset_name);
  if (it != resident_->datasets.end() && it->second.dataset == dataset) {
    it->second.consistency[target->fingerprint] = c;
  }
  return c;
}

absl::Status EvalCoreImpl::AddTargetConsistency(const std::string& target, LoadResult& loaded) {
  std::shared_ptr<const weights::TargetTensors> t;
  std::shared_ptr<const data::EvalDataset> d;
  {
    std::lock_guard<std::mutex> lock(resident_->mu);
    auto ti = PickEntry(resident_->targets, target, ResourceKind::kTarget);
    if (!ti.ok()) {
      return absl::Status(ti.status().code(),
                          absl::StrCat(ti.status().message(), "; load it first"));
    }
    t = (*ti)->second.tensors;
    auto di = resident_->datasets.find(loaded.resource.name);
    if (di == resident_->datasets.end()) {
      return absl::InternalError("dataset vanished after its load");
    }
    d = di->second.dataset;
  }
  ASSIGN_OR_RETURN(loaded.target_consistency, TargetConsistencyOf(loaded.resource.name, d, t),
                   "target consistency of dataset '", loaded.resource.name, "' with target '",
                   target, "'");
  loaded.consistency_target = target;
  return absl::OkStatus();
}

}  // namespace dflash::core
