#include "core/job_service_impl.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "core/compare_stats.h"
#include "core/fleet_objects.h"
#include "core/fleet_shards.h"
#include "core/request_check.h"
#include "core/resident_pick.h"
#include "jobs/refusal.h"

namespace dflash::core {

using types::JobRecord;
using types::JobState;

absl::StatusOr<ResourceInfo> JobServiceImpl::PickListed(ResourceKind kind,
                                                        const std::string& name) const {
  std::vector<ResourceInfo> all = core_.ListResources(kind);
  std::vector<std::string> names;
  names.reserve(all.size());
  for (const ResourceInfo& r : all) names.push_back(r.name);
  ASSIGN_OR_RETURN(size_t i, PickResident(kind, names, name));
  return all[i];
}

absl::StatusOr<std::unique_ptr<JobServiceImpl>> JobServiceImpl::Create(
    EvalCore& core, store::ResultStore& store, jobs::JobQueueOptions options) {
  std::unique_ptr<JobServiceImpl> service(new JobServiceImpl(core, store.shared()));
  JobServiceImpl* self = service.get();
  options.fleet.resident = [self] { return self->ResidentNames(); };
  options.fleet.info_json = [self](const std::vector<std::string>& running) {
    return FleetInfoJson(self->core_, running);
  };
  ASSIGN_OR_RETURN(service->queue_,
                   jobs::JobQueue::Create(
                       store,
                       [self](const JobRecord& job, const types::ProgressFn& progress) {
                         return self->RunJob(job, progress);
                       },
                       std::move(options)));
  return service;
}

void JobServiceImpl::SetFleetObjects(const std::vector<LoadTargetParams>& targets,
                                     const std::vector<LoadDatasetParams>& datasets) {
  fleet_objects_ = MakeFleetObjects(targets, datasets);
}

JobServiceImpl::~JobServiceImpl() {
  Shutdown(std::chrono::milliseconds(0));
}

absl::StatusOr<types::EvalResult> JobServiceImpl::RunJob(const JobRecord& job,
                                                         const types::ProgressFn& progress) {
  types::EvalParams r = job.request.params;
  if (shared_) {  // the objects it names by path, loaded here when absent
    OnDemandHooks hooks;
    hooks.loaded = [this](ResourceKind kind, const std::string& name) {
      std::lock_guard<std::mutex> lock(on_demand_mu_);
      on_demand_.insert({kind, name});
    };
    hooks.free_space = [this] { return FreeOnDemand(); };
    absl::StatusOr<types::EvalParams> loaded =
        LoadOnDemand(core_, fleet_objects_, job.request, job.server, hooks);
    // Over this server's budget: another server of the fleet may hold it.
    if (absl::IsResourceExhausted(loaded.status())) return jobs::Refusal(loaded.status());
    if (!loaded.ok()) return loaded.status();
    r = *std::move(loaded);
  }
  absl::StatusOr<types::EvalResult> result =
      !job.request.suite_datasets.empty() ? RunSuite(job, progress)
      : SplitsIntoShards(job.request)     ? RunFleetShards(core_, *queue_, job, r, progress)
                                          : core_.RunEval(r, progress);
  if (job.request.unload_after && !r.drafter.empty()) {
    std::lock_guard<std::mutex> lock(resource_mu_);
    std::vector<std::string> others = queue_->UnfinishedJobsWhere(
        [&r](const types::JobRequest& o) { return o.params.drafter == r.drafter; }, job.id);
    std::string note;
    if (!others.empty()) {
      note = absl::StrCat("unload_after: drafter '", r.drafter, "' kept resident; jobs ",
                          absl::StrJoin(others, ", "), " use it");
    } else if (auto unloaded = core_.Unload(ResourceKind::kDrafter, r.drafter); !unloaded.ok()) {
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
    for (const ResourceInfo& d : core_.ListResources(ResourceKind::kDrafter)) {
      if (d.name == r.drafter) has_selector = d.has_selector;
    }
  }
  RETURN_IF_ERROR(CheckJobRequest(record.request, has_selector));
  std::lock_guard<std::mutex> lock(resource_mu_);
  if (!shared_ && !(record.request.dataset_path.empty() && record.request.target_path.empty())) {
    return absl::FailedPreconditionError(
        "dataset_path and target_path name objects for a fleet's servers to load on demand; this "
        "server has no fleet (see --store): load them and name them with dataset and target");
  }
  if (shared_) {
    RETURN_IF_ERROR(PlaceInFleet(record));
    return queue_->Submit(std::move(record));
  }
  ASSIGN_OR_RETURN(ResourceInfo target, PickListed(ResourceKind::kTarget, r.target));
  std::vector<std::string> resident;
  for (const ResourceInfo& d : core_.ListResources(ResourceKind::kDataset)) {
    resident.push_back(d.name);
  }
  ASSIGN_OR_RETURN(record.request.suite_datasets, ResolveSuite(r.dataset, suites_, resident));
  if (record.request.suite_datasets.empty()) {
    ASSIGN_OR_RETURN(ResourceInfo dataset, PickListed(ResourceKind::kDataset, r.dataset));
    record.dataset_fingerprint = dataset.fingerprint;
  } else {
    std::vector<std::string> fingerprints;
    for (const std::string& name : record.request.suite_datasets) {
      ASSIGN_OR_RETURN(ResourceInfo dataset, PickListed(ResourceKind::kDataset, name), "suite '",
                       r.dataset, "'");
      fingerprints.push_back(dataset.fingerprint);
    }
    record.dataset_fingerprint = absl::StrJoin(fingerprints, ",");
    if (!record.request.gate.reference.empty()) {
      return absl::InvalidArgumentError(
          "gate applies to one dataset; gate each dataset of the suite in its own job");
    }
  }
  if (!r.drafter.empty()) {
    ASSIGN_OR_RETURN(ResourceInfo drafter, PickListed(ResourceKind::kDrafter, r.drafter));
    record.drafter_fingerprint = drafter.fingerprint;
  }
  record.device = target.device;
  const types::GateSpec& gate = record.request.gate;
  if (!gate.reference.empty() && gate.reference != "best" && gate.reference != "previous") {
    ASSIGN_OR_RETURN(JobRecord ref, queue_->Get(gate.reference), "gate reference");
    if (ref.state != JobState::kSucceeded) {
      return absl::FailedPreconditionError(absl::StrCat("gate reference ", gate.reference, " is ",
                                                        types::JobStateName(ref.state),
                                                        "; the reference must have SUCCEEDED"));
    }
  }
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

absl::StatusOr<ResourceInfo> JobServiceImpl::Unload(ResourceKind kind, const std::string& name) {
  std::lock_guard<std::mutex> lock(resource_mu_);
  std::vector<std::string> users =
      queue_->UnfinishedJobsWhere([kind, &name](const types::JobRequest& request) {
        const types::EvalParams& r = request.params;
        switch (kind) {
          case ResourceKind::kDrafter: return r.drafter == name;
          case ResourceKind::kDataset:
            return r.dataset == name ||
                   std::count(request.suite_datasets.begin(), request.suite_datasets.end(), name);
          case ResourceKind::kTarget: return r.target == name || r.target.empty();
        }
        return false;
      });
  if (!users.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(ResourceKindName(kind), " '", name, "' is used by queued or running jobs ",
                     absl::StrJoin(users, ", "), "; cancel them or wait for them to finish"));
  }
  return core_.Unload(kind, name);
}

store::ClaimRequest JobServiceImpl::ResidentNames() const {
  store::ClaimRequest names;
  for (const ResourceInfo& r : core_.ListResources(std::nullopt)) {
    switch (r.kind) {
      case ResourceKind::kTarget:
        names.targets.push_back(r.name);
        names.target_paths.push_back(r.source_path);
        break;
      case ResourceKind::kDataset:
        names.datasets.push_back(r.name);
        names.dataset_paths.push_back(r.source_path);
        break;
      case ResourceKind::kDrafter: names.drafters.push_back(r.name); break;
    }
  }
  return names;
}

int JobServiceImpl::FreeOnDemand() {
  std::lock_guard<std::mutex> lock(on_demand_mu_);
  int freed = 0;
  for (auto it = on_demand_.begin(); it != on_demand_.end();) {
    const ResourceKind kind = it->first;
    const std::string& name = it->second;
    std::string path;
    for (const ResourceInfo& r : core_.ListResources(kind)) {
      if (r.name == name) path = r.source_path;
    }
    const auto uses = [&](const types::JobRequest& q) { return UsesObject(q, kind, name, path); };
    if (!path.empty() && !queue_->UnfinishedJobsWhere(uses).empty()) {
      ++it;  // a job running here uses it (this one included)
      continue;
    }
    if (!path.empty() && core_.Unload(kind, name).ok()) ++freed;
    it = on_demand_.erase(it);  // unloaded now, or by hand before
  }
  return freed;
}

absl::StatusOr<std::vector<FleetMember>> JobServiceImpl::Fleet() {
  ASSIGN_OR_RETURN(std::vector<store::FleetServer> servers, queue_->FleetServers());
  std::vector<FleetMember> members;
  for (const store::FleetServer& s : servers) {
    ASSIGN_OR_RETURN(FleetMember m, ParseFleetMember(s.name, s.info_json, s.heartbeat_age_micros));
    members.push_back(std::move(m));
  }
  return members;
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
