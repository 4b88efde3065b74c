// File: job_service_impl.h
// JobService over an EvalCore, a JobQueue and a ResultStore. A job runs
// EvalCore::RunEval with the same parameters RunEval gets, so its numbers are
// RunEval's. unload_after frees a resident drafter after its job (a
// checkpoint-path job's one-shot drafter is never kept anyway).
// Where a job's objects are found (here, or on a fleet's servers) is the
// JobPlacement's (core/job_placement.h); where jobs wait is the queue's
// JobBackend (jobs/job_backend.h).
// Its calls are defined over several files: job_service_impl.cc (submit,
// run, unload, watch), job_gate.cc, job_compare.cc and served_jobs.cc.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "core/job_placement.h"
#include "core/job_service.h"
#include "core/suite_job.h"
#include "resident/resource.h"

namespace dflash::core {

class JobServiceImpl final : public JobService {
 public:
  // `core` and `store` must outlive the service; `backend` and `placement`
  // are chosen together (app/job_backend_select.h).
  static absl::StatusOr<std::unique_ptr<JobServiceImpl>> Create(
      EvalCore& core, store::ResultStore& store, jobs::JobQueueOptions options,
      std::unique_ptr<jobs::JobBackend> backend, std::unique_ptr<JobPlacement> placement);
  ~JobServiceImpl() override;

  absl::StatusOr<types::JobRecord> Submit(types::JobRequest request) override;
  absl::StatusOr<types::JobRecord> Resubmit(const std::string& id) override;
  absl::StatusOr<types::JobRecord> Get(const std::string& id) override;
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query) override;
  absl::StatusOr<types::JobRecord> Cancel(const std::string& id) override;
  absl::StatusOr<Comparison> Compare(const std::vector<std::string>& ids,
                                     const CompareOptions& options) override;
  absl::StatusOr<WatchStart> Watch(const std::string& id, jobs::WatchFn fn) override;
  void Unwatch(int64_t handle) override;
  absl::StatusOr<ProfileExport> ExportProfile(const std::string& id, const std::string& format,
                                              int setting) override;
  absl::StatusOr<CalibrationResult> Calibrate(
      const std::string& id, const std::vector<std::pair<std::string, std::string>>& files,
      int setting) override;
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override;
  absl::StatusOr<std::vector<FleetMember>> Fleet() override;
  bool store_reachable() const override { return queue_->store_reachable(); }
  int queued() const override;
  int running() const override;
  void Shutdown(std::chrono::milliseconds grace) override;

 private:
  JobServiceImpl(EvalCore& core, std::unique_ptr<JobPlacement> placement)
      : core_(core), placement_(std::move(placement)) {}
  absl::StatusOr<types::EvalResult> RunJob(const types::JobRecord& job,
                                           const types::ProgressFn& progress);
  absl::StatusOr<types::JobRecord> SubmitRecord(types::JobRecord record);
  // A suite job: each dataset in turn, then the macro average.
  absl::StatusOr<types::EvalResult> RunSuite(const types::JobRecord& job,
                                             const types::ProgressFn& progress);
  // The regression gate's reference for a finished job (`job.result` set):
  // nullopt + why when there is none yet; FailedPrecondition when the
  // reference's recipe differs (core/recipe.h) and the gate does not allow it.
  absl::StatusOr<std::optional<types::JobRecord>> GateReference(const types::JobRecord& job,
                                                                std::string* why);

  EvalCore& core_;
  const std::unique_ptr<JobPlacement> placement_;
  // Held across "which jobs use it?" and the unload, and across a submit's
  // resident check and its enqueue, so neither slips between the other.
  std::mutex resource_mu_;
  std::unique_ptr<jobs::JobQueue> queue_;
};

}  // namespace dflash::core
