// File: fake_job_backend.h
// A JobBackend whose jobs wait elsewhere, as a fleet's do in its store:
// Record keeps none in the queue's FIFO; the one runner loop runs the job
// Release() hands it, as a claim would; every final record is kept for the
// test. What a fleet's backend decides (hand back, follow a job elsewhere)
// the test sets. Shared by job_backend_test and job_queue_seam_test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_backend.h"
#include "jobs/job_queue.h"

namespace dflash::testing {

class FakeBackend final : public jobs::JobBackend {
 public:
  // Set before the queue starts. HandBack's answer for every failed job.
  std::optional<std::string> hand_back = "handed back: fake";
  // WatchElsewhere's answer: whether the queue subscribes a job not here.
  bool watch_elsewhere = false;

  absl::Status Open() override { return absl::OkStatus(); }
  void Attach(jobs::JobQueue& queue) override { queue_ = &queue; }
  // Ids ev-fake-1, ev-fake-2, ...; nothing waits in this process.
  absl::StatusOr<bool> Record(types::JobRecord& job, int queued_here) override;
  void RunLoop() override;
  void WakeRunners() override;
  void StoreStarted(const types::JobRecord&) override {}
  // Kept; FailedPrecondition (not this server's to report) when the lease
  // was lost, as a fleet's store answers.
  absl::Status StoreFinal(types::JobRecord& record, bool lease_lost) override;
  std::optional<std::string> HandBack(const absl::Status&, bool) override { return hand_back; }
  // A CANCELLED record with that id.
  absl::StatusOr<types::JobRecord> CancelElsewhere(const std::string& id,
                                                   std::chrono::milliseconds) override;
  bool WatchElsewhere(const types::JobRecord&) override { return watch_elsewhere; }
  absl::StatusOr<std::vector<store::FleetServer>> LiveServers() override {
    return std::vector<store::FleetServer>{};
  }

  // The runner loop runs `job` (as claimed: RUNNING, with its attempt).
  void Release(types::JobRecord job);
  // The records StoreFinal got, once there are `n` (fewer after 30 s).
  std::vector<types::JobRecord> WaitFinal(size_t n);
  // StoreFinal's lease_lost of each of them.
  std::vector<bool> final_lease_lost();

  int recorded_ = 0, queued_here_ = -1;

 private:
  jobs::JobQueue* queue_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<types::JobRecord> to_run_;
  std::vector<types::JobRecord> final_;
  std::vector<bool> final_lease_lost_;
};

}  // namespace dflash::testing
