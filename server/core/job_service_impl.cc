#include "core/job_service_impl.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fix_hint.h"
#include "common/status_macros.h"
#include "core/fleet_objects.h"
#include "core/fleet_shards.h"
#include "core/recipe.h"
#include "core/request_check.h"
#include "core/resident_pick.h"
#include "eval/bootstrap.h"
#include "jobs/refusal.h"

namespace dflash::core {
namespace {

using jobs::JobRecord;
using jobs::JobState;

// The listed resident object a request names (empty: the only one), by the
// rule RunEval picks with (core/resident_pick.h), before the job is queued.
absl::StatusOr<ResourceInfo> PickListed(const EvalCore& core, ResourceKind kind,
                                        const std::string& name) {
  std::vector<ResourceInfo> all = core.ListResources(kind);
  std::vector<std::string> names;
  names.reserve(all.size());
  for (const ResourceInfo& r : all) names.push_back(r.name);
  ASSIGN_OR_RETURN(size_t i, PickResident(kind, names, name));
  return all[i];
}

// Names of the live servers holding `name` of `kind` ("" for the target: the
// servers holding exactly one).
std::vector<std::string> Holders(const std::vector<FleetMember>& fleet, ResourceKind kind,
                                 const std::string& name) {
  std::vector<std::string> holders;
  for (const FleetMember& m : fleet) {
    const std::vector<std::string>& names = kind == ResourceKind::kTarget    ? m.targets
                                            : kind == ResourceKind::kDataset ? m.datasets
                                                                             : m.drafters;
    const bool holds = name.empty() ? names.size() == 1
                                    : std::find(names.begin(), names.end(), name) != names.end();
    if (holds) holders.push_back(m.name);
  }
  return holders;
}

}  // namespace

absl::Status JobServiceImpl::PlaceInFleet(JobRecord& record) {
  RETURN_IF_ERROR(RecordFleetPaths(fleet_objects_, record.request));
  const EvalParams& r = record.request.params;
  ASSIGN_OR_RETURN(std::vector<FleetMember> fleet, Fleet());
  std::vector<std::string> needs, loads;
  std::vector<std::string> where;  // servers holding all of them
  bool first = true;
  const std::tuple<ResourceKind, std::string, std::string> named[] = {
      {ResourceKind::kTarget, r.target, record.request.target_path},
      {ResourceKind::kDataset, r.dataset, record.request.dataset_path},
      {ResourceKind::kDrafter, r.drafter, ""}};
  for (const auto& [kind, name, path] : named) {
    if (kind == ResourceKind::kDrafter && name.empty()) continue;  // a checkpoint path
    if (!path.empty()) {                                           // any server loads it
      loads.push_back(absl::StrCat(ResourceKindName(kind), " '", name, "' from '", path, "'"));
      continue;
    }
    // Here first: the same words as a single server when nobody has it.
    absl::StatusOr<ResourceInfo> here = PickListed(core_, kind, name);
    if (here.ok() && kind == ResourceKind::kDataset) record.dataset_fingerprint = here->fingerprint;
    if (here.ok() && kind == ResourceKind::kDrafter) record.drafter_fingerprint = here->fingerprint;
    std::vector<std::string> holders = Holders(fleet, kind, name);
    if (holders.empty() && !here.ok()) {
      absl::Status nowhere(here.status().code(),
                           absl::StrCat(here.status().message(), "; no live server of the fleet ",
                                        "holds it either"));
      if (std::optional<FixHint> hint = GetFixHint(here.status())) {
        nowhere = WithFixHint(nowhere, *hint);
      }
      return nowhere;
    }
    // This server counts as soon as it holds the object: the servers table
    // hears of a load only at the next heartbeat.
    const std::string& self = queue_->fleet_server();
    if (here.ok() && std::find(holders.begin(), holders.end(), self) == holders.end()) {
      holders.push_back(self);
    }
    needs.push_back(name.empty() ? absl::StrCat("one ", ResourceKindName(kind), " only")
                                 : absl::StrCat(ResourceKindName(kind), " '", name, "'"));
    if (first) {
      where = holders;
    } else {
      std::vector<std::string> both;
      for (const std::string& h : where) {
        if (std::find(holders.begin(), holders.end(), h) != holders.end()) both.push_back(h);
      }
      where = both;
    }
    first = false;
  }
  if (!first && where.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no live server of the fleet holds all of ", absl::StrJoin(needs, ", "),
                     "; load them on one server, or name the drafter by checkpoint path"));
  }
  // Pinned: names only some servers hold (loaded there by name, not paths
  // nor names of the fleet's config) keep the job waiting for those servers.
  const std::string load_text =
      loads.empty() ? ""
                    : absl::StrCat("loads ", absl::StrJoin(loads, ", "), " where not resident");
  if (first) {
    record.placement = absl::StrCat("runs on any server; ", load_text);
    return absl::OkStatus();
  }
  record.placement =
      absl::StrCat("runs only on a server holding ", absl::StrJoin(needs, ", "),
                   " (now: ", absl::StrJoin(where, ", "), ")", load_text.empty() ? "" : "; ",
                   load_text, "; name objects by path to run on any server");
  return absl::OkStatus();
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
                       [self](const JobRecord& job, const eval::ProgressFn& progress) {
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

absl::StatusOr<eval::EvalResult> JobServiceImpl::RunJob(const JobRecord& job,
                                                        const eval::ProgressFn& progress) {
  EvalParams r = job.request.params;
  if (shared_) {  // the objects it names by path, loaded here when absent
    OnDemandHooks hooks;
    hooks.loaded = [this](ResourceKind kind, const std::string& name) {
      std::lock_guard<std::mutex> lock(on_demand_mu_);
      on_demand_.insert({kind, name});
    };
    hooks.free_space = [this] { return FreeOnDemand(); };
    absl::StatusOr<EvalParams> loaded =
        LoadOnDemand(core_, fleet_objects_, job.request, job.server, hooks);
    // Over this server's budget: another server of the fleet may hold it.
    if (absl::IsResourceExhausted(loaded.status())) return jobs::Refusal(loaded.status());
    if (!loaded.ok()) return loaded.status();
    r = *std::move(loaded);
  }
  absl::StatusOr<eval::EvalResult> result =
      !job.request.suite_datasets.empty() ? RunSuite(job, progress)
      : SplitsIntoShards(job.request)     ? RunFleetShards(core_, *queue_, job, r, progress)
                                          : core_.RunEval(r, progress);
  if (job.request.unload_after && !r.drafter.empty()) {
    std::lock_guard<std::mutex> lock(resource_mu_);
    std::vector<std::string> others = queue_->UnfinishedJobsWhere(
        [&r](const jobs::JobRequest& o) { return o.params.drafter == r.drafter; }, job.id);
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

absl::StatusOr<eval::EvalResult> JobServiceImpl::RunSuite(const JobRecord& job,
                                                          const eval::ProgressFn& progress) {
  std::vector<eval::DatasetResult> parts;
  eval::EvalProgress done;  // the datasets already finished
  for (const std::string& dataset : job.request.suite_datasets) {
    EvalParams params = job.request.params;
    params.dataset = dataset;
    const eval::ProgressFn offset = [&](const eval::EvalProgress& p) {
      eval::EvalProgress all = p;
      all.blocks_done += done.blocks_done;
      all.blocks_total += done.blocks_total;
      all.samples_done += done.samples_done;
      all.samples_total += done.samples_total;
      return progress ? progress(all) : true;
    };
    ASSIGN_OR_RETURN(eval::EvalResult r, core_.RunEval(params, offset), "suite dataset '", dataset,
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
  const EvalParams& r = record.request.params;
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
  ASSIGN_OR_RETURN(ResourceInfo target, PickListed(core_, ResourceKind::kTarget, r.target));
  std::vector<std::string> resident;
  for (const ResourceInfo& d : core_.ListResources(ResourceKind::kDataset)) {
    resident.push_back(d.name);
  }
  ASSIGN_OR_RETURN(record.request.suite_datasets, ResolveSuite(r.dataset, suites_, resident));
  if (record.request.suite_datasets.empty()) {
    ASSIGN_OR_RETURN(ResourceInfo dataset, PickListed(core_, ResourceKind::kDataset, r.dataset));
    record.dataset_fingerprint = dataset.fingerprint;
  } else {
    std::vector<std::string> fingerprints;
    for (const std::string& name : record.request.suite_datasets) {
      ASSIGN_OR_RETURN(ResourceInfo dataset, PickListed(core_, ResourceKind::kDataset, name),
                       "suite '", r.dataset, "'");
      fingerprints.push_back(dataset.fingerprint);
    }
    record.dataset_fingerprint = absl::StrJoin(fingerprints, ",");
    if (!record.request.gate.reference.empty()) {
      return absl::InvalidArgumentError(
          "gate applies to one dataset; gate each dataset of the suite in its own job");
    }
  }
  if (!r.drafter.empty()) {
    ASSIGN_OR_RETURN(ResourceInfo drafter, PickListed(core_, ResourceKind::kDrafter, r.drafter));
    record.drafter_fingerprint = drafter.fingerprint;
  }
  record.device = target.device;
  const jobs::GateSpec& gate = record.request.gate;
  if (!gate.reference.empty() && gate.reference != "best" && gate.reference != "previous") {
    ASSIGN_OR_RETURN(JobRecord ref, queue_->Get(gate.reference), "gate reference");
    if (ref.state != JobState::kSucceeded) {
      return absl::FailedPreconditionError(absl::StrCat("gate reference ", gate.reference, " is ",
                                                        jobs::JobStateName(ref.state),
                                                        "; the reference must have SUCCEEDED"));
    }
  }
  return queue_->Submit(std::move(record));
}

absl::StatusOr<JobRecord> JobServiceImpl::Submit(jobs::JobRequest request) {
  JobRecord record;
  record.request = std::move(request);
  return SubmitRecord(std::move(record));
}

absl::StatusOr<JobRecord> JobServiceImpl::Resubmit(const std::string& id) {
  ASSIGN_OR_RETURN(JobRecord old, queue_->Get(id));
  if (!jobs::IsTerminal(old.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", jobs::JobStateName(old.state),
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

absl::StatusOr<jobs::JobPage> JobServiceImpl::List(const jobs::ListQuery& query) {
  return queue_->List(query);
}

absl::StatusOr<JobRecord> JobServiceImpl::Cancel(const std::string& id) {
  return queue_->Cancel(id, std::chrono::seconds(10));
}

absl::StatusOr<std::optional<JobRecord>> JobServiceImpl::GateReference(const JobRecord& job,
                                                                       std::string* why) {
  const jobs::GateSpec& gate = job.request.gate;
  const eval::EvalResult& result = *job.result;
  const Recipe recipe = RecipeOf(job);
  if (gate.reference != "best" && gate.reference != "previous") {
    auto ref = queue_->Get(gate.reference);
    if (!ref.ok() || !ref->result) {
      *why = absl::StrCat("job ", gate.reference, " has no result");
      return std::nullopt;
    }
    if (!gate.allow_recipe_mismatch) RETURN_IF_ERROR(RequireSameRecipe({*ref, job}, "gate"));
    return *ref;
  }
  // Earlier steps of the same run, scored on the same data.
  jobs::ListQuery q;
  q.state = JobState::kSucceeded;
  q.run = job.request.run;
  q.dataset = result.dataset_fingerprint;
  q.order_by_step = true;
  q.page_size = 1000;
  if (job.request.step == 0) {
    *why = absl::StrCat("step 0 has no earlier step in run '", job.request.run, "'");
    return std::nullopt;
  }
  q.max_step = job.request.step - 1;
  auto metric = eval::ParseMetric(gate.metric, static_cast<int64_t>(result.positions.size()));
  std::optional<JobRecord> pick;
  std::string other_recipe;
  double best = 0;
  for (;;) {
    auto page = queue_->List(q);
    if (!page.ok()) {
      *why = absl::StrCat("listing run '", job.request.run, "': ", page.status().message());
      return std::nullopt;
    }
    for (JobRecord& j : page->jobs) {
      if (j.id == job.id || !j.result || !metric.ok() ||
          metric->position > static_cast<int64_t>(j.result->positions.size())) {
        continue;
      }
      if (!gate.allow_recipe_mismatch) {
        std::vector<std::string> d = RecipeDifferences(recipe, RecipeOf(j));
        if (!d.empty()) {  // the latest of another recipe, to name it if none matches
          other_recipe = absl::StrCat(j.id, " (step ", j.request.step, ") differs in ",
                                      absl::StrJoin(d, "; "));
          continue;
        }
      }
      const auto u = eval::Units(*j.result);
      const double v = eval::MetricValues({*metric}, u, std::vector<int64_t>(u.size(), 1))[0];
      // previous: the last in step order (newest among equal steps); best: the highest value.
      if (gate.reference == "previous" || !pick || v > best) {
        best = v;
        pick = std::move(j);
      }
    }
    if (page->next_page_token.empty()) break;
    q.page_token = page->next_page_token;
  }
  if (!pick && !other_recipe.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("gate: no earlier job of run '", job.request.run, "' has this job's recipe (",
                     recipe.fingerprint, "); the latest, ", other_recipe,
                     "; pass --allow-recipe-mismatch to gate against it anyway"));
  }
  if (!pick) {
    *why = absl::StrCat("no SUCCEEDED job of run '", job.request.run, "' below step ",
                        job.request.step, " on this dataset");
  }
  return pick;
}

absl::StatusOr<Comparison> JobServiceImpl::Compare(const std::vector<std::string>& ids,
                                                   const CompareOptions& options) {
  if (ids.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("compare needs at least two job ids; got ", ids.size()));
  }
  Comparison c;
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(JobRecord job, queue_->Get(id));
    if (job.state != JobState::kSucceeded || !job.result) {
      return absl::FailedPreconditionError(absl::StrCat("job ", id, " is ",
                                                        jobs::JobStateName(job.state),
                                                        "; only SUCCEEDED jobs can be compared"));
    }
    c.jobs.push_back(std::move(job));
  }
  const auto& jobs = c.jobs;
  if (!options.allow_recipe_mismatch) RETURN_IF_ERROR(RequireSameRecipe(jobs, "compare"));
  const Recipe base_recipe = RecipeOf(jobs.front());
  for (size_t i = 1; i < jobs.size(); ++i) {
    for (const std::string& d : RecipeDifferences(base_recipe, RecipeOf(jobs[i]))) {
      c.warnings.push_back(
          absl::StrCat("recipe of ", jobs[i].id, " differs from ", jobs.front().id, ": ", d));
    }
  }

  const eval::EvalResult& base = *jobs.front().result;
  size_t common = base.positions.size();
  for (const JobRecord& j : jobs) {
    const eval::EvalResult& r = *j.result;
    c.accept_length.push_back(r.accept_length_pooled);
    c.accept_length_delta.push_back(r.accept_length_pooled - base.accept_length_pooled);
    c.tau.push_back(r.tau);
    common = std::min(common, r.positions.size());
  }
  for (size_t p = 0; p < common; ++p) {
    PositionComparison pc;
    pc.position = base.positions[p].position;
    for (const JobRecord& j : jobs) {
      const eval::PositionMetrics& m = j.result->positions[p];
      pc.accuracy.push_back(m.accuracy);
      pc.accuracy_delta.push_back(m.accuracy - base.positions[p].accuracy);
      pc.acceptance.push_back(m.acceptance);
    }
    c.positions.push_back(std::move(pc));
  }
  auto differences = PairedDifferences(c.jobs, options.resamples, options.seed);
  if (differences.ok()) {
    c.differences = *std::move(differences);
  } else if (options.require_paired) {
    return differences.status();
  } else {
    c.warnings.push_back(absl::StrCat("no paired intervals: ", differences.status().message()));
  }
  return c;
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
      queue_->UnfinishedJobsWhere([kind, &name](const jobs::JobRequest& request) {
        const EvalParams& r = request.params;
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
    const auto uses = [&](const jobs::JobRequest& q) { return UsesObject(q, kind, name, path); };
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
