// File: fleet_placement.h
// The JobPlacement of a fleet's server (core/job_placement.h). At submit a
// job's objects are looked up here and on the fleet's live servers (the
// placement text says which may run it); objects named by path, or by a
// name the fleet's config maps to one, may be loaded on demand by whichever
// server claims the job (fleet/fleet_objects.h). A load over this server's
// budget is a refusal (fleet/refusal.h): another server may hold it. A job
// asking for shards runs as shard jobs across the fleet (fleet_shards.h).
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "core/job_placement.h"
#include "fleet/fleet_backend.h"
#include "fleet/fleet_objects.h"
#include "resident/resource.h"

namespace dflash::fleet {

class FleetPlacement final : public core::JobPlacement {
 public:
  // `core` and `backend` (the queue's) must outlive the placement.
  FleetPlacement(core::EvalCore& core, FleetBackend& backend, FleetObjects objects)
      : core_(core), backend_(backend), objects_(std::move(objects)) {}

  // Records the paths a job names (fleet_objects.h); FailedPrecondition when
  // no live server holds every object it names by name alone.
  absl::Status Place(types::JobRecord& record, jobs::JobQueue& queue) override;
  // Loads what the job names by path and lacks here.
  absl::StatusOr<types::EvalParams> Prepare(const types::JobRecord& job,
                                            jobs::JobQueue& queue) override;
  absl::StatusOr<types::EvalResult> Run(const types::JobRecord& job,
                                        const types::EvalParams& params,
                                        const types::ProgressFn& progress,
                                        jobs::JobQueue& queue) override;

 private:
  // Unloads the objects loaded on demand that no job running here uses;
  // how many.
  int FreeOnDemand(jobs::JobQueue& queue);

  core::EvalCore& core_;
  FleetBackend& backend_;
  const FleetObjects objects_;
  std::mutex on_demand_mu_;                                             // guards on_demand_
  std::set<std::pair<resident::ResourceKind, std::string>> on_demand_;  // loaded for jobs
};

}  // namespace dflash::fleet
