#include "core/job_service_impl.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "core/compare_stats.h"
#include "core/fleet_member.h"
#include "core/request_check.h"
#include "resident/resource.h"

namespace dflash::core {

using types::JobRecord;
using types::JobState;

absl::StatusOr<std::unique_ptr<JobServiceImpl>> JobServiceImpl::Create(
    EvalCore& core, store::ResultStore& store, jobs::JobQueueOptions options,
    std::unique_ptr<jobs::JobBackend> backend, std::unique_ptr<JobPlacement> placement) {
  if (placement == nullptr) return absl::InvalidArgumentError("a job service needs a placement");
  std::unique_ptr<JobServiceImpl> service(new JobServiceImpl(core, std::move(placement)));
  JobServiceImpl* self = service.get();
  ASSIGN_OR_RETURN(service->queue_,
                   jobs::JobQueue::Create(
                       store,
                       [self](const JobRecord& job, const types::ProgressFn& progress) {
                         return self->RunJob(job, progress);
                       },
                       std::move(options), std::move(backend)));
  return service;
}

JobServiceImpl::~JobServiceImpl() {
  Shutdown(std::chrono::milliseconds(0));
}

absl::StatusOr<types::EvalResult> JobServiceImpl::RunJob(const JobRecord& job,
                                                         const types::ProgressFn& progress) {
  ASSIGN_OR_RETURN(const types::EvalParams r, placement_->Prepare(job, *queue_));
  absl::StatusOr<types::EvalResult> result = !job.request.suite_datasets.empty()
                                                 ? RunSuite(job, progress)
                                                 : placement_->Run(job, r, progress, *queue_);
  if (job.request.unload_after && !r.drafter.empty()) {
    std::lock_guard<std::mutex> lock(resource_mu_);
    std::vector<std::string> others = queue_->UnfinishedJobsWhere(
        [&r](const types::JobRequest& o) { return o.params.drafter == r.drafter; }, job.id);
    std::string note;
    if (!others.empty()) {
      note = absl::StrCat("unload_after: drafter '", r.drafter, "' kept resident; jobs ",
                          absl::StrJoin(others, ", "), " use it");
    } else if (auto unloaded = core_.Unload(resident::ResourceKind::kDrafter, r.drafter);
               !unloaded.ok()) {
      note = absl::StrCat("unload_after: ", unloaded.status().message());
    }
    if (!note.empty() && result.ok()) result->warnings.push_back(note);
  }
  if (result.ok() && !job.request.gate.reference.empty()) {
    std::string why;
    JobRecord finished = job;
    finished.result = *result;
    absl::StatusOr<std::optional<JobRecord>> reference = GateReference(finished, &why);
    result->gate = GateVerdictFor(job, *result, reference, why);
  }
  return result;
}

absl::StatusOr<types::EvalResult> JobServiceImpl::RunSuite(const JobRecord& job,
                                                           const types::ProgressFn& progress) {
  std::vector<types::DatasetResult> parts;
  types::EvalProgress done;  // the datasets already finished
  for (const std::string& dataset : job.request.suite_datasets) {
    types::EvalParams params = job.request.params;
    params.dataset = dataset;
    const types::ProgressFn offset = [&](const types::EvalProgress& p) {
      types::EvalProgress all = p;
      all.blocks_done += done.blocks_done;
      all.blocks_total += done.blocks_total;
      all.samples_done += done.samples_done;
      all.samples_total += done.samples_total;
      return progress ? progress(all) : true;
    };
    ASSIGN_OR_RETURN(types::EvalResult r, core_.RunEval(params, offset), "suite dataset '", dataset,
                     "'");
    done.blocks_done += r.blocks;
    done.blocks_total += r.blocks;
    done.samples_done += static_cast<int64_t>(r.per_sample.size());
    done.samples_total += static_cast<int64_t>(r.per_sample.size());
    parts.push_back({dataset, std::move(r)});
  }
  return MacroAverage(job.request.params.dataset, std::move(parts));
}

absl::StatusOr<JobRecord> JobServiceImpl::SubmitRecord(JobRecord record) {
  const types::EvalParams& r = record.request.params;
  // The request's rules (core/request_check.h), the ones RunEval applies,
  // now: a bad request is never queued. Whether the drafter has a selector
  // is known here only when it is resident.
  std::optional<bool> has_selector;
  if (!r.drafter.empty()) {
    for (const resident::ResourceInfo& d : core_.ListResources(resident::ResourceKind::kDrafter)) {
      if (d.name == r.drafter) has_selector = d.has_selector;
    }
  }
  RETURN_IF_ERROR(CheckJobRequest(record.request, has_selector));
  std::lock_guard<std::mutex> lock(resource_mu_);
  RETURN_IF_ERROR(placement_->Place(record, *queue_));
  return queue_->Submit(std::move(record));
}

absl::StatusOr<JobRecord> JobServiceImpl::Submit(types::JobRequest request) {
  JobRecord record;
  record.request = std::move(request);
  return SubmitRecord(std::move(record));
}

absl::StatusOr<JobRecord> JobServiceImpl::Resubmit(const std::string& id) {
  ASSIGN_OR_RETURN(JobRecord old, queue_->Get(id));
  if (!types::IsTerminal(old.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", types::JobStateName(old.state),
                     "; only finished jobs can be resubmitted (cancel it first)"));
  }
  JobRecord record;
  record.request = old.request;
  record.resubmitted_from = id;
  return SubmitRecord(std::move(record));
}

absl::StatusOr<JobRecord> JobServiceImpl::Get(const std::string& id) {
  return queue_->Get(id);
}

absl::StatusOr<types::JobPage> JobServiceImpl::List(const types::ListQuery& query) {
  return queue_->List(query);
}

absl::StatusOr<JobRecord> JobServiceImpl::Cancel(const std::string& id) {
  return queue_->Cancel(id, std::chrono::seconds(10));
}

absl::StatusOr<WatchStart> JobServiceImpl::Watch(const std::string& id, jobs::WatchFn fn) {
  ASSIGN_OR_RETURN(jobs::JobQueue::Watch w, queue_->Subscribe(id, std::move(fn)));
  return WatchStart{std::move(w.current), w.handle};
}

void JobServiceImpl::Unwatch(int64_t handle) {
  queue_->Unsubscribe(handle);
}

absl::StatusOr<resident::ResourceInfo> JobServiceImpl::Unload(resident::ResourceKind kind,
                                                              const std::string& name) {
  std::lock_guard<std::mutex> lock(resource_mu_);
  std::vector<std::string> users =
      queue_->UnfinishedJobsWhere([kind, &name](const types::JobRequest& request) {
        const types::EvalParams& r = request.params;
        switch (kind) {
          case resident::ResourceKind::kDrafter: return r.drafter == name;
          case resident::ResourceKind::kDataset:
            return r.dataset == name ||
                   std::count(request.suite_datasets.begin(), request.suite_datasets.end(), name);
          case resident::ResourceKind::kTarget: return r.target == name || r.target.empty();
        }
        return false;
      });
  if (!users.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        resident::ResourceKindName(kind), " '", name, "' is used by queued or running jobs ",
        absl::StrJoin(users, ", "), "; cancel them or wait for them to finish"));
  }
  return core_.Unload(kind, name);
}

absl::StatusOr<std::vector<FleetMember>> JobServiceImpl::Fleet() {
  ASSIGN_OR_RETURN(std::vector<store::FleetServer> servers, queue_->FleetServers());
  return ParseFleetMembers(servers);
}

int JobServiceImpl::queued() const {
  return queue_->queued();
}
int JobServiceImpl::running() const {
  return queue_->running();
}

void JobServiceImpl::Shutdown(std::chrono::milliseconds grace) {
  if (queue_) queue_->Shutdown(grace);
}

}  // namespace dflash::core
