// File: local_placement.h
// The JobPlacement of a single server (core/job_placement.h): a job names
// objects resident here (by the rule RunEval picks with,
// resident/pick.h), checked at submit so a job that cannot run is
// never queued; a dataset may name a suite of the server's config.
#pragma once

#include <utility>

#include "core/job_placement.h"
#include "core/suite_job.h"

namespace dflash::core {

class LocalPlacement final : public JobPlacement {
 public:
  // `core` must outlive the placement; `suites` are the config's (name ->
  // datasets).
  LocalPlacement(EvalCore& core, SuiteMap suites) : core_(core), suites_(std::move(suites)) {}

  // FailedPrecondition for objects named by path (a fleet's), and for a
  // gate reference that has not SUCCEEDED; the pick's errors for the rest.
  absl::Status Place(types::JobRecord& record, jobs::JobQueue& queue) override;
  absl::StatusOr<types::EvalParams> Prepare(const types::JobRecord& job, jobs::JobQueue&) override {
    return job.request.params;
  }
  absl::StatusOr<types::EvalResult> Run(const types::JobRecord&, const types::EvalParams& params,
                                        const types::ProgressFn& progress,
                                        jobs::JobQueue&) override {
    return core_.RunEval(params, progress);
  }

 private:
  EvalCore& core_;
  const SuiteMap suites_;
};

}  // namespace dflash::core
