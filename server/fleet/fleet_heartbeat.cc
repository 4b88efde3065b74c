// File: fleet_heartbeat.cc
// FleetBackend's own thread (fleet_backend.h): at each heartbeat it tells
// the fleet this server lives and renews the leases of the jobs it runs
// (learning of cancels and lost leases); between, it polls the store for
// the jobs watched here that run elsewhere.
#include <algorithm>
#include <utility>

#include "fleet/fleet_backend.h"
#include "store/record_json.h"

namespace dflash::fleet {
namespace {

using types::JobRecord;
using Clock = std::chrono::steady_clock;

}  // namespace

void FleetBackend::Loop() {
  Clock::time_point next_beat = Clock::now();
  std::unique_lock<std::mutex> lock(loop_mu_);
  while (!loop_stop_) {
    lock.unlock();
    if (Clock::now() >= next_beat) {
      Heartbeat();
      next_beat = Clock::now() + options_.heartbeat;
    }
    PollRemoteWatches();
    lock.lock();
    loop_cv_.wait_for(lock, options_.poll, [this] { return loop_stop_; });
  }
}

void FleetBackend::Heartbeat() {
  RenewLeases();
  std::vector<std::string> running;
  for (const JobRecord& r : queue_->Active()) running.push_back(r.id);
  const std::string info = options_.info_json ? options_.info_json(running) : "{}";
  store_reachable_ = store_.Heartbeat(options_.server, info).ok();
}

void FleetBackend::RenewLeases() {
  for (const JobRecord& record : queue_->Active()) {
    if (record.state != types::JobState::kRunning) continue;
    // Progress goes to the store with the renewal, for the fleet's viewers.
    absl::StatusOr<bool> cancel = store_.PutLeased(record, Micros(options_.lease));
    if (absl::IsFailedPrecondition(cancel.status())) {
      queue_->StopRunning(record.id, /*lease_lost=*/true);  // at its next chunk boundary
    } else if (cancel.ok() && *cancel) {
      queue_->StopRunning(record.id, /*lease_lost=*/false);
    }
  }
}

void FleetBackend::PollRemoteWatches() {
  const std::vector<std::string> ids = queue_->WatchedElsewhere();
  {
    // Forget jobs no longer watched from here (unwatched, or claimed and
    // ended here); one just subscribed is kept until the next poll.
    std::lock_guard<std::mutex> lock(seen_mu_);
    for (auto it = remote_seen_.begin(); it != remote_seen_.end();) {
      const bool watched = std::find(ids.begin(), ids.end(), it->first) != ids.end();
      const bool keep = watched || it->second.fresh;
      it->second.fresh = false;
      it = keep ? std::next(it) : remote_seen_.erase(it);
    }
  }
  for (const std::string& id : ids) {
    absl::StatusOr<JobRecord> r = store_.Get(id);
    if (!r.ok()) continue;  // the next poll tries again
    std::string text = store::RecordToJson(*r);
    {
      std::lock_guard<std::mutex> lock(seen_mu_);
      auto seen = remote_seen_.find(id);
      if (seen != remote_seen_.end() && seen->second.json == text) continue;
    }
    if (!queue_->DeliverIfNotHere(*r)) continue;
    std::lock_guard<std::mutex> lock(seen_mu_);
    if (types::IsTerminal(r->state)) {
      remote_seen_.erase(id);  // its watches ended with it
    } else {
      remote_seen_[id] = Seen{std::move(text), false};
    }
  }
}

void FleetBackend::Close() {
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    if (loop_stop_) return;
    loop_stop_ = true;
  }
  loop_cv_.notify_all();
  if (loop_thread_.joinable()) loop_thread_.join();
  // Else it ages out of LiveServers.
  if (queue_ != nullptr) store_.Leave(options_.server).IgnoreError();
}

}  // namespace dflash::fleet
