#include "resident/registry.h"

#include <chrono>
#include <mutex>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/ops_observer.h"
#include "common/status_macros.h"
#include "eval/target_consistency.h"
#include "resident/loads.h"
#include "resident/pick.h"
#include "resident/placement.h"
#include "resident/resident_set.h"

namespace dflash::resident {
namespace {

using Clock = std::chrono::steady_clock;

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

// Every load is timed and reported to Ops(); a reused resident object was no load.
absl::StatusOr<LoadResult> ReportLoad(ResourceKind kind, Clock::time_point start,
                                      absl::StatusOr<LoadResult> result) {
  if (!result.ok() || !result->reused) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Ops().OnLoad(ResourceKindName(kind), result.status().code(), seconds);
  }
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Registry>> Registry::Create(RegistryOptions options) {
  ASSIGN_OR_RETURN(DataRoots roots, DataRoots::Create(options.data_roots));
  return std::unique_ptr<Registry>(new Registry(std::move(options), std::move(roots)));
}

Registry::Registry(RegistryOptions options, DataRoots roots)
    : options_(std::move(options)),
      roots_(std::move(roots)),
      set_(std::make_unique<ResidentSet>()) {}

Registry::~Registry() = default;

LoadEnv Registry::Env() const {
  LoadEnv env;
  env.roots = &roots_;
  env.device = options_.device;
  env.max_resident_bytes = options_.max_resident_bytes;
  env.map = weights::MapPolicy{!options_.no_mmap, options_.mmap_min_age_seconds};
  return env;
}

std::vector<ResourceInfo> Registry::List(std::optional<ResourceKind> kind) const {
  std::vector<ResourceInfo> out;
  std::lock_guard<std::mutex> lock(set_->mu);
  auto want = [&kind](ResourceKind k) { return !kind || *kind == k; };
  if (want(ResourceKind::kTarget)) {
    for (const auto& [_, e] : set_->targets) out.push_back(e.info);
  }
  if (want(ResourceKind::kDrafter)) {
    for (const auto& [_, e] : set_->drafters) out.push_back(e.info);
  }
  if (want(ResourceKind::kDataset)) {
    for (const auto& [_, e] : set_->datasets) out.push_back(e.info);
  }
  return out;
}

absl::StatusOr<ResourceInfo> Registry::Unload(ResourceKind kind, const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("unload: name is empty");
  std::lock_guard<std::mutex> lock(set_->mu);
  switch (kind) {
    case ResourceKind::kTarget:
      return Erase(set_->targets, name, kind, &ResidentSet::Target::tensors);
    case ResourceKind::kDrafter:
      return Erase(set_->drafters, name, kind, &ResidentSet::Drafter::model);
    case ResourceKind::kDataset:
      return Erase(set_->datasets, name, kind, &ResidentSet::Dataset::dataset);
  }
  return absl::InternalError("unknown resource kind");
}

absl::StatusOr<weights::WeightReport> Registry::ValidateCheckpoint(
    const ValidateParams& params) const {
  return ValidateCheckpointIn(*set_, Env(), params);
}

absl::StatusOr<LoadResult> Registry::LoadDrafter(const LoadDrafterParams& params) {
  const Clock::time_point start = Clock::now();
  return ReportLoad(ResourceKind::kDrafter, start, LoadDrafterInto(*set_, Env(), params));
}

absl::StatusOr<LoadResult> Registry::LoadTarget(const LoadTargetParams& params) {
  const Clock::time_point start = Clock::now();
  return ReportLoad(ResourceKind::kTarget, start, LoadTargetInto(*set_, Env(), params));
}

absl::StatusOr<LoadResult> Registry::LoadDataset(const LoadDatasetParams& params) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<LoadResult> loaded = LoadDatasetInto(*set_, Env(), params);
  if (loaded.ok() && !params.target.empty()) {
    const absl::Status s = AddTargetConsistency(params.target, *loaded);
    if (!s.ok()) loaded = s;
  }
  return ReportLoad(ResourceKind::kDataset, start, std::move(loaded));
}

absl::StatusOr<Registry::Picked> Registry::Pick(const std::string& target,
                                                const std::string& dataset,
                                                const std::string& drafter) const {
  Picked p;
  std::lock_guard<std::mutex> lock(set_->mu);
  ASSIGN_OR_RETURN(auto t, PickEntry(set_->targets, target, ResourceKind::kTarget));
  p.target.object = t->second.tensors;
  p.target.info = t->second.info;
  // Aliasing: the target's mapping lives with its tensors.
  p.target.mapping = {p.target.object, &p.target.object->mapping};
  ASSIGN_OR_RETURN(auto d, PickEntry(set_->datasets, dataset, ResourceKind::kDataset));
  p.dataset.object = d->second.dataset;
  p.dataset.info = d->second.info;
  p.dataset.mapping = {p.dataset.object, &p.dataset.object->mapping()};
  if (!drafter.empty()) {
    ASSIGN_OR_RETURN(auto m, PickEntry(set_->drafters, drafter, ResourceKind::kDrafter));
    p.drafter = {m->second.model, m->second.info, m->second.mapping};
  }
  return p;
}

absl::StatusOr<Registry::Held<model::DrafterModel>> Registry::DrafterFromCheckpoint(
    const std::string& checkpoint_path, const weights::TargetTensors& target) {
  // A resident drafter loaded from the same unchanged files, in the
  // target's placement, is the same weights: use it, load nothing.
  ASSIGN_OR_RETURN(std::string resolved, roots_.Resolve(checkpoint_path, "checkpoint_path"));
  const std::string dtype = DTypeLabel(target.embed.scalar_type());
  const std::string device = target.embed.device().str();
  const std::string signature = DrafterSignature(resolved, "", dtype, device);
  {
    std::lock_guard<std::mutex> lock(set_->mu);
    for (const auto& [name, entry] : set_->drafters) {
      if (entry.disk_signature != signature) continue;
      return Held<model::DrafterModel>{entry.model, entry.info, entry.mapping};
    }
  }
  // One-shot: loaded under a name no request can give, taken out at once.
  LoadDrafterParams load;
  load.path = checkpoint_path;
  load.device = device;
  load.dtype = dtype;
  load.name = absl::StrCat("__oneshot__", NowUnixMicros());
  ASSIGN_OR_RETURN(LoadResult loaded, LoadDrafterInto(*set_, Env(), load));
  std::lock_guard<std::mutex> lock(set_->mu);
  auto it = set_->drafters.find(loaded.resource.name);
  if (it == set_->drafters.end()) return absl::InternalError("one-shot drafter vanished");
  Held<model::DrafterModel> held{it->second.model, loaded.resource, it->second.mapping};
  set_->drafters.erase(it);
  return held;
}

absl::StatusOr<types::TargetConsistency> Registry::TargetConsistencyOf(
    const std::string& dataset_name, const std::shared_ptr<const data::EvalDataset>& dataset,
    const std::shared_ptr<const weights::TargetTensors>& target) {
  {
    std::lock_guard<std::mutex> lock(set_->mu);
    auto it = set_->datasets.find(dataset_name);
    if (it != set_->datasets.end() && it->second.dataset == dataset) {
      auto c = it->second.consistency.find(target->fingerprint);
      if (c != it->second.consistency.end()) return c->second;
    }
  }
  // Computed outside the lock: it reads the whole dataset.
  ASSIGN_OR_RETURN(types::TargetConsistency c, eval::ComputeTargetConsistency(*target, *dataset));
  std::lock_guard<std::mutex> lock(set_->mu);
  auto it = set_->datasets.find(dataset_name);
  if (it != set_->datasets.end() && it->second.dataset == dataset) {
    it->second.consistency[target->fingerprint] = c;
  }
  return c;
}

absl::Status Registry::AddTargetConsistency(const std::string& target, LoadResult& loaded) {
  std::shared_ptr<const weights::TargetTensors> t;
  std::shared_ptr<const data::EvalDataset> d;
  {
    std::lock_guard<std::mutex> lock(set_->mu);
    auto ti = PickEntry(set_->targets, target, ResourceKind::kTarget);
    if (!ti.ok()) {
      return absl::Status(ti.status().code(),
                          absl::StrCat(ti.status().message(), "; load it first"));
    }
    t = (*ti)->second.tensors;
    auto di = set_->datasets.find(loaded.resource.name);
    if (di == set_->datasets.end()) {
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

}  // namespace dflash::resident
