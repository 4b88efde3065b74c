#include "absl/strings/str_cat.h"
#include "types/job_types.h"

namespace dflash::types {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued: return "QUEUED";
    case JobState::kRunning: return "RUNNING";
    case JobState::kSucceeded: return "SUCCEEDED";
    case JobState::kFailed: return "FAILED";
    case JobState::kCancelled: return "CANCELLED";
    case JobState::kInterrupted: return "INTERRUPTED";
  }
  return "?";
}

absl::StatusOr<JobState> ParseJobState(absl::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    if (name == JobStateName(s)) return s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("job state '", name,
                   "' is not one of QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, INTERRUPTED"));
}

bool IsTerminal(JobState state) {
  return state != JobState::kQueued && state != JobState::kRunning;
}

}  // namespace dflash::types
