#include "fake_job_backend.h"

#include <utility>

namespace dflash::testing {

absl::StatusOr<bool> FakeBackend::Record(types::JobRecord& job, int queued_here) {
  job.id = "ev-fake-" + std::to_string(++recorded_);
  queued_here_ = queued_here;
  return false;
}

void FakeBackend::RunLoop() {
  for (;;) {
    std::optional<types::JobRecord> claimed;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || to_run_.has_value(); });
      if (stop_) return;
      claimed.swap(to_run_);
    }
    queue_->RunHere(*std::move(claimed), "");
  }
}

void FakeBackend::WakeRunners() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

absl::Status FakeBackend::StoreFinal(types::JobRecord& record, bool lease_lost) {
  std::lock_guard<std::mutex> lock(mu_);
  final_.push_back(record);
  final_lease_lost_.push_back(lease_lost);
  cv_.notify_all();
  if (lease_lost) return absl::FailedPreconditionError("lease lost: not written");
  return absl::OkStatus();
}

absl::StatusOr<types::JobRecord> FakeBackend::CancelElsewhere(const std::string& id,
                                                              std::chrono::milliseconds) {
  types::JobRecord r;
  r.id = id;
  r.state = types::JobState::kCancelled;
  return r;
}

void FakeBackend::Release(types::JobRecord job) {
  std::lock_guard<std::mutex> lock(mu_);
  to_run_ = std::move(job);
  cv_.notify_all();
}

std::vector<types::JobRecord> FakeBackend::WaitFinal(size_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(30), [&] { return final_.size() >= n; });
  return final_;
}

std::vector<bool> FakeBackend::final_lease_lost() {
  std::lock_guard<std::mutex> lock(mu_);
  return final_lease_lost_;
}

}  // namespace dflash::testing
