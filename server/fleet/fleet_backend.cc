// File: fleet_backend.cc
// FleetBackend (fleet_backend.h): jobs recorded in and claimed from the
// shared store, and the final record written under the lease. The
// heartbeat thread is in fleet_heartbeat.cc.
#include "fleet/fleet_backend.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "fleet/refusal.h"
#include "store/record_json.h"

namespace dflash::fleet {
namespace {

using types::JobRecord;
using types::JobState;
using Clock = std::chrono::steady_clock;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FleetBackend::FleetBackend(store::ResultStore& store, FleetOptions options)
    : store_(store), options_(std::move(options)) {}

FleetBackend::~FleetBackend() {
  Close();
}

absl::Status FleetBackend::Open() {
  if (options_.server.empty() || !options_.resident) {
    return absl::InvalidArgumentError(
        "a shared store needs the fleet options: this server's name and its resident names");
  }
  ASSIGN_OR_RETURN(std::string last_id, store_.MaxId());
  ids_ = jobs::JobIdGenerator(std::move(last_id));
  // Live in the fleet before serving: a refusal elsewhere counts this server
  // as one that may hold the job from the first moment it accepts RPCs.
  const std::string info = options_.info_json ? options_.info_json({}) : "{}";
  return store_.Heartbeat(options_.server, info);
}

void FleetBackend::Attach(jobs::JobQueue& queue) {
  queue_ = &queue;
  loop_thread_ = std::thread([this] { Loop(); });
}

absl::StatusOr<bool> FleetBackend::Record(JobRecord& job, int /*queued_here*/) {
  // The fleet's queue is the database's: bounded there (servers submitting at
  // the same instant may each pass the last free place).
  const int limit = queue_->options().max_queued;
  ASSIGN_OR_RETURN(const int64_t queued, store_.CountQueued(), "counting the fleet's queue");
  if (queued >= limit) {
    return absl::ResourceExhaustedError(absl::StrCat("the fleet's queue is full (", queued,
                                                     " queued, limit ", limit,
                                                     "); retry when jobs finish"));
  }
  // Ids are made here; another server may have made the same one.
  absl::Status created;
  for (int tries = 0; tries < 5; ++tries) {
    job.id = ids_.Next(job.create_unix_micros);
    created = store_.Create(job);
    if (!absl::IsAlreadyExists(created)) break;
    ASSIGN_OR_RETURN(std::string last, store_.MaxId());
    ids_ = jobs::JobIdGenerator(std::max(last, job.id));
  }
  RETURN_IF_ERROR(created, "recording job ", job.id);
  WakeIdleRunners();
  return false;
}

void FleetBackend::WakeIdleRunners() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    ++submitted_;
  }
  wake_cv_.notify_all();
}

void FleetBackend::WakeRunners() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    runners_stop_ = true;
  }
  wake_cv_.notify_all();
}

store::ClaimRequest FleetBackend::Claim(const std::string& prefix) const {
  store::ClaimRequest claim = options_.resident();
  claim.server = options_.server;
  claim.lease_micros = Micros(options_.lease);
  claim.max_attempts = options_.max_attempts;
  claim.id_prefix = prefix;
  return claim;
}

void FleetBackend::RunLoop() {
  for (;;) {
    int64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      seen = submitted_;
    }
    if (!queue_->accepting()) return;
    absl::StatusOr<std::optional<JobRecord>> claimed = store_.Claim(Claim(""));
    if (!claimed.ok() || !claimed->has_value()) {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_for(lock, options_.poll, [&] { return runners_stop_ || submitted_ != seen; });
      continue;
    }
    queue_->RunHere(**std::move(claimed), "");
  }
}

absl::StatusOr<JobRecord> FleetBackend::CreateShard(JobRecord shard) {
  const std::string id = shard.id;
  queue_->ResetAsQueued(shard);
  shard.id = id;
  absl::Status created = store_.Create(shard);
  if (absl::IsAlreadyExists(created)) return store_.Get(id);
  RETURN_IF_ERROR(created, "recording shard job ", id);
  WakeIdleRunners();  // idle runners here look at once
  return shard;
}

bool FleetBackend::RunClaimedHere(const std::string& prefix, const std::string& with_job) {
  if (!queue_->accepting()) return false;
  absl::StatusOr<std::optional<JobRecord>> claimed = store_.Claim(Claim(prefix));
  if (!claimed.ok() || !claimed->has_value()) return false;
  queue_->RunHere(**std::move(claimed), with_job);
  return true;
}

absl::StatusOr<JobRecord> FleetBackend::CancelElsewhere(const std::string& id,
                                                        std::chrono::milliseconds wait) {
  // Queued in the store, or running elsewhere: its server sees the flag at
  // its next heartbeat.
  ASSIGN_OR_RETURN(JobRecord r, store_.RequestCancel(id, NowMicros()));
  const Clock::time_point until = Clock::now() + wait;
  while (!types::IsTerminal(r.state) && Clock::now() < until) {
    std::this_thread::sleep_for(options_.poll);
    ASSIGN_OR_RETURN(r, store_.Get(id));
  }
  return r;
}

std::optional<std::string> FleetBackend::HandBack(const absl::Status& status, bool stopping) {
  // Another server may hold what this one cannot (refused here), or the
  // job outlives this server (stopping).
  if (IsRefusal(status)) return absl::StrCat(kRefusedPrefix, status.message());
  if (stopping && absl::IsCancelled(status)) return "handed back: the server stopped";
  return std::nullopt;
}

void FleetBackend::FailIfEveryServerRefused(JobRecord& record) {
  std::set<std::string> refused;
  std::vector<std::string> why;
  for (const types::JobAttempt& a : record.attempts) {
    if (!absl::StartsWith(a.outcome, kRefusedPrefix)) continue;
    refused.insert(a.server);
    why.push_back(a.outcome.substr(std::strlen(kRefusedPrefix)));
  }
  absl::StatusOr<std::vector<store::FleetServer>> live = LiveServers();
  if (!live.ok()) return;  // handed back: the next claim tries again
  for (const store::FleetServer& s : *live) {
    if (!refused.count(s.name)) return;  // one that may hold it
  }
  record.state = JobState::kFailed;
  record.error_code = static_cast<int>(absl::StatusCode::kResourceExhausted);
  record.error_message = absl::StrCat("no live server of the fleet can hold what this job names: ",
                                      absl::StrJoin(why, "; "));
}

absl::Status FleetBackend::StoreFinal(JobRecord& record, bool lease_lost) {
  if (lease_lost) {
    return absl::FailedPreconditionError(
        absl::StrCat("lease lost: job ", record.id, " was taken over; no result written"));
  }
  if (record.state == JobState::kQueued && !record.attempts.empty() &&
      absl::StartsWith(record.attempts.back().outcome, kRefusedPrefix)) {
    FailIfEveryServerRefused(record);
  }
  return store_.PutLeased(record, Micros(options_.lease)).status();
}

bool FleetBackend::WatchElsewhere(const JobRecord& stored) {
  std::lock_guard<std::mutex> lock(seen_mu_);
  remote_seen_[stored.id] = Seen{store::RecordToJson(stored), true};
  return true;  // Loop polls it
}

absl::StatusOr<std::vector<store::FleetServer>> FleetBackend::LiveServers() {
  // Three missed heartbeats: gone.
  return store_.LiveServers(3 * Micros(options_.heartbeat));
}

}  // namespace dflash::fleet
