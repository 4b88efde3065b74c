#include "jobs/local_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobs/job_queue.h"

namespace dflash::jobs {

absl::Status LocalBackend::Open() {
  ASSIGN_OR_RETURN(std::string last_id, store_.MaxId());
  ids_ = JobIdGenerator(std::move(last_id));
  return absl::OkStatus();
}

absl::StatusOr<bool> LocalBackend::Record(types::JobRecord& job, int queued_here) {
  const int limit = queue_->options().max_queued;
  if (queued_here >= limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "queue is full (", queued_here, " queued, limit ", limit, "); retry when jobs finish"));
  }
  job.id = ids_.Next(job.create_unix_micros);
  RETURN_IF_ERROR(store_.Put(job), "recording job ", job.id);
  return true;
}

void LocalBackend::RunLoop() {
  queue_->RunQueued();
}

void LocalBackend::StoreStarted(const types::JobRecord& record) {
  // Not fatal: the final Put rewrites the whole record.
  store_.Put(record).IgnoreError();
}

absl::Status LocalBackend::StoreFinal(types::JobRecord& record, bool /*lease_lost*/) {
  return store_.Put(record);
}

absl::StatusOr<types::JobRecord> LocalBackend::CancelElsewhere(const std::string& id,
                                                               std::chrono::milliseconds /*wait*/) {
  // Not QUEUED or RUNNING here, and there is no elsewhere: finished, or unknown.
  ASSIGN_OR_RETURN(types::JobRecord done, store_.Get(id));
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", id, " already finished (", types::JobStateName(done.state), "); nothing to cancel"));
}

absl::StatusOr<std::vector<store::FleetServer>> LocalBackend::LiveServers() {
  return store_.LiveServers(0);  // a single host's store says it has no fleet
}

}  // namespace dflash::jobs
