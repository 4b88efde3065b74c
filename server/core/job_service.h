// File: job_service.h
// Evaluation jobs as the service sees them: submit, look up, list, watch,
// cancel, resubmit, compare; and unloading that respects queued and running
// jobs. Plain C++ (no gRPC, no torch); service/ maps it to the
// SubmitEval..CompareEvals RPCs. Implementation: job_service_impl.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/compare_stats.h"
#include "core/eval_core.h"
#include "core/fleet_member.h"
#include "jobs/job_queue.h"
#include "resident/resource.h"
#include "served/calibration.h"
#include "types/job_types.h"

namespace dflash::core {

struct PositionComparison {
  int position = 0;
  std::vector<double> accuracy, accuracy_delta, acceptance;  // one per job
};

// Two or more SUCCEEDED jobs side by side; deltas are against jobs[0].
struct Comparison {
  std::vector<types::JobRecord> jobs;
  std::vector<std::string> warnings;
  std::vector<double> accept_length, accept_length_delta, tau;
  std::vector<PositionComparison> positions;
  // Paired-bootstrap differences against jobs[0]; empty (and a warning)
  // when the samples cannot be paired and pairing was not required.
  std::vector<MetricDifference> differences;
};

struct CompareOptions {
  bool require_paired = false;  // FailedPrecondition instead of a warning
  // Compare jobs whose recipes differ (core/recipe.h), each difference a
  // warning, instead of FailedPrecondition.
  bool allow_recipe_mismatch = false;
  int64_t resamples = 1000;
  uint64_t seed = 0;
};

struct WatchStart {
  types::JobRecord current;
  int64_t handle = 0;  // 0: the job had already finished; nothing follows
};

class JobService {
 public:
  virtual ~JobService() = default;

  // Checks the request against what is resident and queues it (QUEUED).
  virtual absl::StatusOr<types::JobRecord> Submit(types::JobRequest request) = 0;
  // A new job with a finished job's request; resubmitted_from names the old.
  virtual absl::StatusOr<types::JobRecord> Resubmit(const std::string& id) = 0;
  virtual absl::StatusOr<types::JobRecord> Get(const std::string& id) = 0;
  virtual absl::StatusOr<types::JobPage> List(const types::ListQuery& query) = 0;
  // Returns the record once the job has stopped (or, for a long chunk, still
  // RUNNING with the stop requested).
  virtual absl::StatusOr<types::JobRecord> Cancel(const std::string& id) = 0;
  virtual absl::StatusOr<Comparison> Compare(const std::vector<std::string>& ids,
                                             const CompareOptions& options) = 0;

  // The job now and, unless finished, every later change via `fn` (under a
  // lock: quick, and no calls back into the service), the final state last.
  virtual absl::StatusOr<WatchStart> Watch(const std::string& id, jobs::WatchFn fn) = 0;
  virtual void Unwatch(int64_t handle) = 0;

  // A SUCCEEDED job's acceptance as a serving profile (served/
  // serving_profile.h): setting 0 = the greedy result, i = sampling[i - 1].
  struct ProfileExport {
    std::string text;   // the file, as the format defines it
    std::string curve;  // which numbers: "greedy", "t=0.7 policy=argmax", ...
  };
  virtual absl::StatusOr<ProfileExport> ExportProfile(const std::string& id,
                                                      const std::string& format, int setting) = 0;
  // Served counters (files as path and contents) against the job's numbers;
  // the calibration is stored with the job. Nothing is stored on an error.
  struct CalibrationResult {
    served::Calibration calibration;
    types::JobRecord job;
  };
  virtual absl::StatusOr<CalibrationResult> Calibrate(
      const std::string& id, const std::vector<std::pair<std::string, std::string>>& files,
      int setting) = 0;

  // EvalCore::Unload, refused (FailedPrecondition naming the jobs) while an
  // unfinished job names the object.
  virtual absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                        const std::string& name) = 0;

  // Fleet (a shared store): the live servers; Unimplemented for a
  // single-host store. Whether the store answered the last heartbeat
  // (readiness; always true for a single-host store).
  virtual absl::StatusOr<std::vector<FleetMember>> Fleet() = 0;
  virtual bool store_reachable() const = 0;

  virtual int queued() const = 0;
  virtual int running() const = 0;
  // Stop accepting; running jobs get `grace`, then end INTERRUPTED.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace dflash::core
