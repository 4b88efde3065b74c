// File: fleet_placement_run.cc
// FleetPlacement (fleet_placement.h) on the server that claimed a job: the
// objects it names loaded on demand, and a sharded job run as shard jobs.
#include <utility>
#include <vector>

#include "fleet/fleet_placement.h"
#include "fleet/fleet_shards.h"
#include "fleet/refusal.h"
#include "resident/resource.h"

namespace dflash::fleet {

absl::StatusOr<types::EvalParams> FleetPlacement::Prepare(const types::JobRecord& job,
                                                          jobs::JobQueue& queue) {
  OnDemandHooks hooks;
  hooks.loaded = [this](resident::ResourceKind kind, const std::string& name) {
    std::lock_guard<std::mutex> lock(on_demand_mu_);
    on_demand_.insert({kind, name});
  };
  hooks.free_space = [this, &queue] { return FreeOnDemand(queue); };
  absl::StatusOr<types::EvalParams> loaded =
      LoadOnDemand(core_, objects_, job.request, job.server, hooks);
  // Over this server's budget: another server of the fleet may hold it.
  if (absl::IsResourceExhausted(loaded.status())) return Refusal(loaded.status());
  return loaded;
}

absl::StatusOr<types::EvalResult> FleetPlacement::Run(const types::JobRecord& job,
                                                      const types::EvalParams& params,
                                                      const types::ProgressFn& progress,
                                                      jobs::JobQueue& queue) {
  if (SplitsIntoShards(job.request)) {
    return RunFleetShards(core_, queue, backend_, job, params, progress);
  }
  return core_.RunEval(params, progress);
}

int FleetPlacement::FreeOnDemand(jobs::JobQueue& queue) {
  std::lock_guard<std::mutex> lock(on_demand_mu_);
  int freed = 0;
  for (auto it = on_demand_.begin(); it != on_demand_.end();) {
    const resident::ResourceKind kind = it->first;
    const std::string& name = it->second;
    std::string path;
    for (const resident::ResourceInfo& r : core_.ListResources(kind)) {
      if (r.name == name) path = r.source_path;
    }
    const auto uses = [&](const types::JobRequest& q) { return UsesObject(q, kind, name, path); };
    if (!path.empty() && !queue.UnfinishedJobsWhere(uses).empty()) {
      ++it;  // a job running here uses it (this one included)
      continue;
    }
    if (!path.empty() && core_.Unload(kind, name).ok()) ++freed;
    it = on_demand_.erase(it);  // unloaded now, or by hand before
  }
  return freed;
}

}  // namespace dflash::fleet
