// File: job_watch.h
// Waiting for a JobQueue's job as a watcher does (JobQueue::Subscribe): no
// polling and no sleeps; the limit only bounds a failure, never a success.
//
//   ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue, id));
//   auto handed_back = WatchUntil(*queue, id, [](const JobRecord& r) { return !r.attempts.empty();
//   });
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "jobs/job_queue.h"
#include "types/job_types.h"

namespace dflash::testing {

// How long a test waits for what should happen at once: only a hung queue
// takes this long, so it bounds a failure, never a success.
inline constexpr std::chrono::seconds kHang{30};

// The first record of job `id`, its current one or a later change, for
// which `until` holds. FailedPrecondition when the job finished without
// one; DeadlineExceeded after `limit`.
absl::StatusOr<types::JobRecord> WatchUntil(
    jobs::JobQueue& queue, const std::string& id,
    const std::function<bool(const types::JobRecord&)>& until, std::chrono::seconds limit = kHang);

// Job `id`'s final record, read back once it finished (a final state is
// committed to the store before any watcher hears of it).
absl::StatusOr<types::JobRecord> WaitDone(jobs::JobQueue& queue, const std::string& id);

}  // namespace dflash::testing
