// File: result_store.h
// Durable job records: every evaluation job, its request and its full result.
// Callers (jobs/, core/) see only this narrow interface; SqliteResultStore is
// the one implementation today. A shared PostgreSQL store (several servers,
// one database) is meant to be another implementation of this class, with no
// change to callers: nothing here assumes SQLite (page tokens are opaque,
// filters are plain values, labels are matched exactly).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "eval/eval_types.h"

namespace dflash::store {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kInterrupted };

// "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED".
const char* JobStateName(JobState state);
absl::StatusOr<JobState> ParseJobState(absl::string_view name);
// SUCCEEDED, FAILED, CANCELLED and INTERRUPTED never change again.
bool IsTerminal(JobState state);

// What was asked: dflash.eval.v1.EvalRequest as plain C++.
struct JobRequest {
  std::string drafter;          // a resident drafter, or
  std::string checkpoint_path;  // a checkpoint loaded for this job
  std::string dataset, target;
  eval::EvalOptions options;
  std::string run;
  int64_t step = 0;
  std::map<std::string, std::string> labels;
  bool unload_after = false;
};

struct JobProgress {
  int64_t blocks_done = 0, blocks_total = 0;
  int64_t samples_done = 0, samples_total = 0;
  double elapsed_seconds = 0, eta_seconds = 0;
};

struct JobRecord {
  std::string id;
  JobState state = JobState::kQueued;
  JobRequest request;
  JobProgress progress;
  std::optional<eval::EvalResult> result;  // set when SUCCEEDED
  int error_code = 0;                      // absl::StatusCode when FAILED
  std::string error_message;
  int64_t create_unix_micros = 0, start_unix_micros = 0, end_unix_micros = 0;
  std::string server_version, device, dtype;
  std::string drafter_fingerprint, dataset_fingerprint;
  bool interrupted_by_restart = false;
  std::string resubmitted_from;
};

struct ListQuery {
  std::optional<JobState> state;
  std::string drafter;  // matches the request's drafter, checkpoint path or drafter fingerprint
  std::string dataset;  // matches the request's dataset or the dataset fingerprint
  std::string run;
  std::optional<int64_t> min_step, max_step;    // inclusive
  std::map<std::string, std::string> labels;    // every one must match exactly
  bool order_by_step = false;  // false: newest first; true: step ascending, then oldest first
  int page_size = 50;          // clamped to [1, 1000]
  std::string page_token;      // from a previous page with the same order
};

struct JobPage {
  std::vector<JobRecord> jobs;
  std::string next_page_token;  // empty on the last page
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;

  // Inserts or replaces the record with this id, in one transaction. A record
  // in state SUCCEEDED is on stable storage when this returns OK.
  virtual absl::Status Put(const JobRecord& record) = 0;
  // NotFound for an unknown id.
  virtual absl::StatusOr<JobRecord> Get(const std::string& id) = 0;
  // InvalidArgument for a malformed page token.
  virtual absl::StatusOr<JobPage> List(const ListQuery& query) = 0;
  // At startup: every QUEUED or RUNNING record (left by a crash) becomes
  // INTERRUPTED with interrupted_by_restart set. Returns the ids changed.
  virtual absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(
      int64_t now_unix_micros) = 0;
  // The greatest job id stored ("" when empty): new ids sort after it.
  virtual absl::StatusOr<std::string> MaxId() = 0;
};

}  // namespace dflash::store
