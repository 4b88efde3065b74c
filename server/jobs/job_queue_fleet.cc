// JobQueue's fleet half: when the store is shared() by several servers, jobs
// wait in the store (not in this process), runners claim them there, a
// lease renewed at each heartbeat says which server runs a job, and a job
// running elsewhere is cancelled and watched through the store.
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "jobs/job_queue.h"
#include "jobs/refusal.h"
#include "store/record_json.h"

namespace dflash::jobs {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Micros(std::chrono::milliseconds d) {
  return static_cast<int64_t>(d.count()) * 1000;
}

}  // namespace

absl::StatusOr<types::JobRecord> JobQueue::SubmitShared(types::JobRecord job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return absl::UnavailableError("the server is shutting down; no new jobs");
  // The fleet's queue is the database's: bounded there (servers submitting at
  // the same instant may each pass the last free place).
  ASSIGN_OR_RETURN(const int64_t queued, store_.CountQueued(), "counting the fleet's queue");
  if (queued >= options_.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat("the fleet's queue is full (", queued,
                                                     " queued, limit ", options_.max_queued,
                                                     "); retry when jobs finish"));
  }
  ResetAsQueued(job);
  // Ids are made here; another server may have made the same one.
  absl::Status created;
  for (int tries = 0; tries < 5; ++tries) {
    job.id = ids_.Next(job.create_unix_micros);
    created = store_.Create(job);
    if (!absl::IsAlreadyExists(created)) break;
    ASSIGN_OR_RETURN(std::string last, store_.MaxId());
    ids_ = JobIdGenerator(std::max(last, job.id));
  }
  RETURN_IF_ERROR(created, "recording job ", job.id);
  ++submitted_;
  cv_.notify_all();
  return job;
}

absl::StatusOr<types::JobRecord> JobQueue::CancelShared(const std::string& id,
                                                        std::chrono::milliseconds wait) {
  ASSIGN_OR_RETURN(types::JobRecord r, store_.RequestCancel(id, NowMicros()));
  // Running elsewhere: its server sees the flag at its next heartbeat.
  const Clock::time_point until = Clock::now() + wait;
  while (!types::IsTerminal(r.state) && Clock::now() < until) {
    std::this_thread::sleep_for(options_.fleet.poll);
    ASSIGN_OR_RETURN(r, store_.Get(id));
  }
  return r;
}

void JobQueue::RunLoopShared() {
  int64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_ || !accepting_) return;
      seen = submitted_;
    }
    store::ClaimRequest claim = options_.fleet.resident();
    claim.server = options_.fleet.server;
    claim.lease_micros = Micros(options_.fleet.lease);
    claim.max_attempts = options_.fleet.max_attempts;
    absl::StatusOr<std::optional<types::JobRecord>> claimed = store_.Claim(claim);
    std::unique_lock<std::mutex> lock(mu_);
    if (!claimed.ok() || !claimed->has_value()) {
      cv_.wait_for(lock, options_.fleet.poll,
                   [&] { return stopping_ || !accepting_ || submitted_ != seen; });
      continue;
    }
    lock.unlock();
    RunClaimed(**std::move(claimed), "");
  }
}

void JobQueue::RunClaimed(types::JobRecord claimed, const std::string& stop_with) {
  auto job = std::make_shared<Job>();
  job->record = std::move(claimed);
  job->stop_with = stop_with;
  job->started = job->last_publish = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[job->record.id] = job;
    ++running_;
    Publish(job->record);
  }
  RunOne(job);
}

absl::StatusOr<types::JobRecord> JobQueue::CreateShard(types::JobRecord shard) {
  const std::string id = shard.id;
  ResetAsQueued(shard);
  shard.id = id;
  absl::Status created = store_.Create(shard);
  if (absl::IsAlreadyExists(created)) return store_.Get(id);
  RETURN_IF_ERROR(created, "recording shard job ", id);
  std::lock_guard<std::mutex> lock(mu_);
  ++submitted_;  // idle runners here look at once
  cv_.notify_all();
  return shard;
}

bool JobQueue::RunClaimedHere(const std::string& prefix, const std::string& with_job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || !accepting_) return false;
  }
  store::ClaimRequest claim = options_.fleet.resident();
  claim.server = options_.fleet.server;
  claim.lease_micros = Micros(options_.fleet.lease);
  claim.max_attempts = options_.fleet.max_attempts;
  claim.id_prefix = prefix;
  absl::StatusOr<std::optional<types::JobRecord>> claimed = store_.Claim(claim);
  if (!claimed.ok() || !claimed->has_value()) return false;
  RunClaimed(**std::move(claimed), with_job);
  return true;
}

bool JobQueue::CancelRequested(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(id);
  return it != active_.end() && it->second->cancel_requested;
}

void JobQueue::FailIfEveryServerRefused(types::JobRecord& record) {
  std::set<std::string> refused;
  std::vector<std::string> why;
  for (const types::JobAttempt& a : record.attempts) {
    if (!absl::StartsWith(a.outcome, kRefusedPrefix)) continue;
    refused.insert(a.server);
    why.push_back(a.outcome.substr(std::strlen(kRefusedPrefix)));
  }
  absl::StatusOr<std::vector<store::FleetServer>> live = FleetServers();
  if (!live.ok()) return;  // handed back: the next claim tries again
  for (const store::FleetServer& s : *live) {
    if (!refused.count(s.name)) return;  // one that may hold it
  }
  record.state = types::JobState::kFailed;
  record.error_code = static_cast<int>(absl::StatusCode::kResourceExhausted);
  record.error_message = absl::StrCat("no live server of the fleet can hold what this job names: ",
                                      absl::StrJoin(why, "; "));
}

absl::Status JobQueue::StoreFinalShared(types::JobRecord& record, const Job& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job.lease_lost) {
      return absl::FailedPreconditionError(
          absl::StrCat("lease lost: job ", record.id, " was taken over; no result written"));
    }
  }
  if (record.state == types::JobState::kQueued && !record.attempts.empty() &&
      absl::StartsWith(record.attempts.back().outcome, kRefusedPrefix)) {
    FailIfEveryServerRefused(record);
  }
  return store_.PutLeased(record, Micros(options_.fleet.lease)).status();
}

void JobQueue::RenewLeases() {
  std::vector<std::pair<std::shared_ptr<Job>, types::JobRecord>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [_, job] : active_) {
      if (job->record.state == types::JobState::kRunning) running.emplace_back(job, job->record);
    }
  }
  for (auto& [job, record] : running) {
    // Progress goes to the store with the renewal, for the fleet's viewers.
    absl::StatusOr<bool> cancel = store_.PutLeased(record, Micros(options_.fleet.lease));
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::IsFailedPrecondition(cancel.status()) && active_.count(record.id)) {
      job->lease_lost = true;  // stops at its next chunk boundary
    } else if (cancel.ok() && *cancel) {
      job->cancel_requested = true;
    }
  }
}

void JobQueue::PollRemoteWatches() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> wlock(watch_mu_);
    for (const auto& [_, w] : watchers_) {
      if (!active_.count(w.id) && (ids.empty() || ids.back() != w.id)) ids.push_back(w.id);
    }
  }
  for (const std::string& id : ids) {
    absl::StatusOr<types::JobRecord> r = store_.Get(id);
    if (!r.ok()) continue;  // the next poll tries again
    const std::string text = store::RecordToJson(*r);
    std::lock_guard<std::mutex> lock(mu_);
    if (active_.count(id)) continue;  // claimed here meanwhile: Publish reports it
    std::lock_guard<std::mutex> wlock(watch_mu_);
    auto seen = remote_seen_.find(id);
    if (seen != remote_seen_.end() && seen->second == text) continue;
    remote_seen_[id] = text;
    DeliverLocked(*r);
  }
}

void JobQueue::FleetLoop() {
  Clock::time_point next_beat = Clock::now();
  std::unique_lock<std::mutex> lock(fleet_mu_);
  while (!fleet_stop_) {
    lock.unlock();
    if (Clock::now() >= next_beat) {
      RenewLeases();
      std::vector<std::string> running;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [id, _] : active_) running.push_back(id);
      }
      const std::string info = options_.fleet.info_json ? options_.fleet.info_json(running) : "{}";
      store_reachable_ = store_.Heartbeat(options_.fleet.server, info).ok();
      next_beat = Clock::now() + options_.fleet.heartbeat;
    }
    PollRemoteWatches();
    lock.lock();
    fleet_cv_.wait_for(lock, options_.fleet.poll, [this] { return fleet_stop_; });
  }
}

void JobQueue::StopFleet() {
  {
    std::lock_guard<std::mutex> lock(fleet_mu_);
    if (fleet_stop_) return;
    fleet_stop_ = true;
  }
  fleet_cv_.notify_all();
  if (fleet_thread_.joinable()) fleet_thread_.join();
  store_.Leave(options_.fleet.server).IgnoreError();  // else it ages out of LiveServers
}

absl::StatusOr<std::vector<store::FleetServer>> JobQueue::FleetServers() {
  // Three missed heartbeats: gone.
  return store_.LiveServers(3 * Micros(options_.fleet.heartbeat));
}

}  // namespace dflash::jobs
