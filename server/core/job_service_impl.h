// File: job_service_impl.h
// JobService over an EvalCore, a JobQueue and a ResultStore. A job runs
// EvalCore::RunEval with the same parameters RunEval gets, so its numbers are
// RunEval's. unload_after frees a resident drafter after its job (a
// checkpoint-path job's one-shot drafter is never kept anyway).
// Its calls are defined over several files: job_service_impl.cc (submit,
// run, unload, watch), job_fleet_placement.cc, job_gate.cc, job_compare.cc
// and served_jobs.cc.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "core/fleet_objects.h"
#include "core/job_service.h"
#include "core/suite_job.h"

namespace dflash::core {

class JobServiceImpl final : public JobService {
 public:
  // `core` and `store` must outlive the service.
  static absl::StatusOr<std::unique_ptr<JobServiceImpl>> Create(EvalCore& core,
                                                                store::ResultStore& store,
                                                                jobs::JobQueueOptions options);
  ~JobServiceImpl() override;
  // The suites the server's config declares (name -> datasets); call before serving.
  void SetSuites(SuiteMap suites) { suites_ = std::move(suites); }
  // Fleet: the targets and datasets of the fleet's config (its preload
  // list): any server loads them by name on demand (core/fleet_objects.h).
  void SetFleetObjects(const std::vector<LoadTargetParams>& targets,
                       const std::vector<LoadDatasetParams>& datasets);

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
  absl::StatusOr<ResourceInfo> Unload(ResourceKind kind, const std::string& name) override;
  absl::StatusOr<std::vector<FleetMember>> Fleet() override;
  bool store_reachable() const override { return queue_->store_reachable(); }
  int queued() const override;
  int running() const override;
  void Shutdown(std::chrono::milliseconds grace) override;

 private:
  JobServiceImpl(EvalCore& core, bool shared) : core_(core), shared_(shared) {}
  absl::StatusOr<types::EvalResult> RunJob(const types::JobRecord& job,
                                           const types::ProgressFn& progress);
  absl::StatusOr<types::JobRecord> SubmitRecord(types::JobRecord record);
  // The listed resident object a request names (empty: the only one), by the
  // rule RunEval picks with (core/resident_pick.h), before the job is queued.
  absl::StatusOr<ResourceInfo> PickListed(ResourceKind kind, const std::string& name) const;
  // A suite job: each dataset in turn, then the macro average.
  absl::StatusOr<types::EvalResult> RunSuite(const types::JobRecord& job,
                                             const types::ProgressFn& progress);
  // The regression gate's reference for a finished job (`job.result` set):
  // nullopt + why when there is none yet; FailedPrecondition when the
  // reference's recipe differs (core/recipe.h) and the gate does not allow it.
  absl::StatusOr<std::optional<types::JobRecord>> GateReference(const types::JobRecord& job,
                                                                std::string* why);
  // Fleet: the resident objects `record` names, looked up here and, when
  // absent here, on the fleet's live servers; sets the job's placement.
  absl::Status PlaceInFleet(types::JobRecord& record);
  store::ClaimRequest ResidentNames() const;
  // Fleet: unloads the objects loaded on demand that no job running here
  // uses; how many.
  int FreeOnDemand();

  EvalCore& core_;
  const bool shared_;  // the store is a fleet's
  // Held across "which jobs use it?" and the unload, and across a submit's
  // resident check and its enqueue, so neither slips between the other.
  std::mutex resource_mu_;
  std::unique_ptr<jobs::JobQueue> queue_;
  SuiteMap suites_;
  FleetObjects fleet_objects_;
  std::mutex on_demand_mu_;                                   // guards on_demand_
  std::set<std::pair<ResourceKind, std::string>> on_demand_;  // loaded for jobs
};

}  // namespace dflash::core
