// File: job_placement.h
// Where JobServiceImpl's jobs find the objects they name: the seam between
// the job service (request rules, suites, unload_after, the gate;
// job_service_impl.h) and what differs between a single server and a fleet.
//   LocalPlacement (core/local_placement.h): the objects resident here,
//     checked at submit; a job runs RunEval.
//   fleet::FleetPlacement (fleet/fleet_placement.h): the objects resident
//     on any live server of the fleet, or named by path and loaded on demand
//     by the server that claims the job; a sharded job runs on several.
// Chosen once, with the JobBackend (jobs/job_backend.h), in app/.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "jobs/job_queue.h"

namespace dflash::core {

class JobPlacement {
 public:
  virtual ~JobPlacement() = default;

  // At submit (the request's rules passed; under the service's resource
  // lock): whether `record` may run, and where. Sets what is known of it
  // now: fingerprints, suite datasets, device or placement. The error
  // refuses the job before it is queued.
  virtual absl::Status Place(types::JobRecord& record, jobs::JobQueue& queue) = 0;
  // On the runner that took `job`: its parameters, naming objects resident
  // here.
  virtual absl::StatusOr<types::EvalParams> Prepare(const types::JobRecord& job,
                                                    jobs::JobQueue& queue) = 0;
  // Runs `job` (one dataset) with `params` from Prepare.
  virtual absl::StatusOr<types::EvalResult> Run(const types::JobRecord& job,
                                                const types::EvalParams& params,
                                                const types::ProgressFn& progress,
                                                jobs::JobQueue& queue) = 0;
};

}  // namespace dflash::core
