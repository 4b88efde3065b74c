// File: types/job_types.h
// A job's vocabulary: its state, what was asked, its progress and its durable
// record, and how records are listed. Torch-free and store-free: the store,
// the queue, the core and the service all speak these types, and none of them
// owns them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "types/eval_params.h"
#include "types/eval_types.h"

namespace dflash::types {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kInterrupted };

// "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED".
const char* JobStateName(JobState state);
absl::StatusOr<JobState> ParseJobState(absl::string_view name);
// SUCCEEDED, FAILED, CANCELLED and INTERRUPTED never change again.
bool IsTerminal(JobState state);

// A regression gate: compare the finished job with a reference job of the
// same run and dataset (docs/decision-metrics-stats.md, "Regression gate").
struct GateSpec {
  std::string reference;       // "best", "previous" or a job id; empty = no gate
  std::string metric = "tau";  // a metric name (eval::ParseMetric)
  double min_delta = 0;        // worse when the interval lies below -min_delta
  // Gate against a job whose recipe differs (core/recipe.h); else the
  // verdict is "error" naming the fields.
  bool allow_recipe_mismatch = false;
  // With has_floor: the gate also fails when a slice present in both jobs
  // drops in accept length by more than `floor` (the worst slice named).
  bool has_floor = false;
  double floor = 0;
};

// What was asked: dflash.eval.v1.EvalRequest as plain C++.
struct JobRequest {
  EvalParams params;
  std::string run;
  int64_t step = 0;
  std::map<std::string, std::string> labels;
  bool unload_after = false;
  GateSpec gate;
  // A suite: params.dataset names it ("a,b,c" or a suite of the server's
  // config) and these are its datasets, resolved at submit; empty = one dataset.
  std::vector<std::string> suite_datasets;
  // A fleet: the dataset and target by absolute path (or, set at submit, the
  // path the fleet's config gives their name), which the server that claims
  // the job loads when it lacks them; empty = by resident name only.
  std::string dataset_path, target_path;
};

struct JobProgress {
  int64_t blocks_done = 0, blocks_total = 0;
  int64_t samples_done = 0, samples_total = 0;
  double elapsed_seconds = 0, eta_seconds = 0;
  bool blocks_total_is_bound = false;  // see EvalProgress
};

// One run of a job by one server. A fleet job (shared PostgreSQL store) may
// run more than once: when its server dies, another takes it over.
struct JobAttempt {
  std::string server;  // the server's fleet name (its advertised address)
  int64_t start_unix_micros = 0, end_unix_micros = 0;
  std::string outcome;  // "" while running; the state it ended in, or why it stopped
};

struct JobRecord {
  std::string id;
  JobState state = JobState::kQueued;
  JobRequest request;
  JobProgress progress;
  std::optional<EvalResult> result;  // set when SUCCEEDED
  int error_code = 0;                // absl::StatusCode when FAILED
  std::string error_message;
  int64_t create_unix_micros = 0, start_unix_micros = 0, end_unix_micros = 0;
  std::string server_version, device, dtype;
  std::string drafter_fingerprint, dataset_fingerprint;
  bool interrupted_by_restart = false;
  std::string resubmitted_from;
  // Fleet: each run of the job, oldest first (empty for a single-host store's
  // jobs); the server that ran the last one; and, when the job may run only on
  // some servers (it names a resident object), which and why.
  std::vector<JobAttempt> attempts;
  std::string server;
  std::string placement;
  // Served counters compared with this job (served/calibration.h), each as
  // its JSON object, oldest first; added after the job SUCCEEDED.
  std::vector<std::string> calibrations;
};

struct ListQuery {
  std::optional<JobState> state;
  std::string drafter;  // matches the request's drafter, checkpoint path or drafter fingerprint
  std::string dataset;  // matches the request's dataset or the dataset fingerprint
  std::string run;
  std::string suite;                          // suite jobs whose suite (params.dataset) is this
  std::optional<int64_t> min_step, max_step;  // inclusive
  std::map<std::string, std::string> labels;  // every one must match exactly
  bool order_by_step = false;  // false: newest first; true: step ascending, then oldest first
  int page_size = 50;          // clamped to [1, 1000]
  // The records come with empty per-sample summaries: a listing that never
  // shows them (the web view's) skips most of the text it would parse (a
  // 64-sample suite record is ~87 KB with them, ~29 KB without). The store
  // skips them before parsing (store/lean_record.h).
  bool without_per_sample = false;
  std::string page_token;  // from a previous page with the same order
};

struct JobPage {
  std::vector<JobRecord> jobs;
  std::string next_page_token;  // empty on the last page
};

}  // namespace dflash::types
