// File: local_backend.h
// The JobBackend of a single server (jobs/job_backend.h): jobs wait in this
// process, in the queue's bounded FIFO (at most max_queued), and every
// record is written to the store with Put. Nothing is handed back and
// nothing runs elsewhere.
#pragma once

#include "jobs/job_backend.h"
#include "jobs/job_id.h"

namespace dflash::jobs {

class LocalBackend final : public JobBackend {
 public:
  // `store` must outlive the backend.
  explicit LocalBackend(store::ResultStore& store) : store_(store) {}

  absl::Status Open() override;
  void Attach(JobQueue& queue) override { queue_ = &queue; }
  absl::StatusOr<bool> Record(types::JobRecord& job, int queued_here) override;
  void RunLoop() override;
  void StoreStarted(const types::JobRecord& record) override;
  absl::Status StoreFinal(types::JobRecord& record, bool lease_lost) override;
  std::optional<std::string> HandBack(const absl::Status&, bool) override { return std::nullopt; }
  absl::StatusOr<types::JobRecord> CancelElsewhere(const std::string& id,
                                                   std::chrono::milliseconds wait) override;
  bool WatchElsewhere(const types::JobRecord&) override { return false; }
  absl::StatusOr<std::vector<store::FleetServer>> LiveServers() override;

 private:
  store::ResultStore& store_;
  JobQueue* queue_ = nullptr;
  JobIdGenerator ids_;  // under the queue's lock (Record)
};

}  // namespace dflash::jobs
