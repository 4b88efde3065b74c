// File: job_queue_seam.cc
// JobQueue's side of the JobBackend seam (jobs/job_backend.h): what a
// backend may read of the jobs in this process, and the ways it may run,
// stop or report them.
#include <algorithm>
#include <chrono>
#include <utility>

#include "jobs/job_queue.h"

namespace dflash::jobs {

bool JobQueue::accepting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepting_;
}

void JobQueue::RunHere(types::JobRecord claimed, const std::string& stop_with) {
  auto job = std::make_shared<Job>();
  job->record = std::move(claimed);
  job->stop_with = stop_with;
  job->started = job->last_publish = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[job->record.id] = job;
    ++running_;
    Publish(job->record);
  }
  RunOne(job);
}

std::vector<types::JobRecord> JobQueue::Active() const {
  std::vector<types::JobRecord> records;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [_, job] : active_) records.push_back(job->record);
  return records;
}

void JobQueue::StopRunning(const std::string& id, bool lease_lost) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(id);
  if (it == active_.end()) return;
  (lease_lost ? it->second->lease_lost : it->second->cancel_requested) = true;
}

bool JobQueue::LeaseLost(const Job& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  return job.lease_lost;
}

bool JobQueue::CancelRequested(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(id);
  return it != active_.end() && it->second->cancel_requested;
}

std::vector<std::string> JobQueue::WatchedElsewhere() const {
  std::vector<std::string> ids;
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> wlock(watch_mu_);
  // Watchers are kept by handle: a job's are not always adjacent (a, b, a).
  for (const auto& [_, w] : watchers_) {
    if (!active_.count(w.id) && std::find(ids.begin(), ids.end(), w.id) == ids.end()) {
      ids.push_back(w.id);
    }
  }
  return ids;
}

bool JobQueue::DeliverIfNotHere(const types::JobRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_.count(record.id)) return false;  // claimed here meanwhile: Publish reports it
  std::lock_guard<std::mutex> wlock(watch_mu_);
  DeliverLocked(record);
  return true;
}

}  // namespace dflash::jobs
