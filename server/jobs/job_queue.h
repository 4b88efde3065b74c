// File: job_queue.h
// Evaluation jobs: served by N runner threads, every state change written
// to a ResultStore, progress pushed to watchers. Where jobs wait (this
// process's bounded FIFO, or a fleet's store) is the JobBackend's
// (jobs/job_backend.h). Knows nothing of torch or gRPC: what a job does is
// the Runner (core/ passes one that calls EvalCore::RunEval; tests pass a fake).
//
// States: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED | INTERRUPTED;
// QUEUED -> CANCELLED (CancelEval) | INTERRUPTED (server stopping).
// A SUCCEEDED record is committed to the store before any caller or watcher
// can see that state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "jobs/job_backend.h"
#include "store/result_store.h"
#include "types/eval_types.h"

namespace dflash::jobs {

// Runs one job. `progress` is the evaluator's ProgressFn: it records progress
// and returns false when the job must stop (cancelled, or the server is
// stopping); the runner then returns CancelledError.
using Runner = std::function<absl::StatusOr<types::EvalResult>(const types::JobRecord& job,
                                                               const types::ProgressFn& progress)>;

// Called with a copy of the record on every change. Runs under the queue's
// lock: it must be quick and must not call back into the queue.
using WatchFn = std::function<void(const types::JobRecord&)>;

struct JobQueueOptions {
  int max_queued = 64;      // QUEUED jobs at most; more is RESOURCE_EXHAUSTED
  int concurrent_jobs = 1;  // runner threads
  std::string server_version;
  // Watchers get progress (not state changes) at most this often.
  std::chrono::milliseconds progress_interval{200};
};

class JobQueue {
 public:
  // Marks the jobs a crash left QUEUED or RUNNING as INTERRUPTED, opens the
  // backend, then starts the runners. `store` must outlive the queue.
  static absl::StatusOr<std::unique_ptr<JobQueue>> Create(store::ResultStore& store, Runner runner,
                                                          JobQueueOptions options,
                                                          std::unique_ptr<JobBackend> backend);
  ~JobQueue();  // Shutdown(0)
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // `job` carries the request and, when known, fingerprints and
  // resubmitted_from; the queue sets id, state, times and server version.
  // ResourceExhausted when the queue is full, Unavailable once shutting down.
  absl::StatusOr<types::JobRecord> Submit(types::JobRecord job);
  // Live record for unfinished jobs, the store's for the others.
  absl::StatusOr<types::JobRecord> Get(const std::string& id);
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query);
  // QUEUED: CANCELLED at once. RUNNING: asked to stop at its next chunk
  // boundary; waits up to `wait` for it to end and returns the record as it
  // then stands. FailedPrecondition for a finished job, NotFound if unknown.
  absl::StatusOr<types::JobRecord> Cancel(const std::string& id, std::chrono::milliseconds wait);
  // Appends a calibration (its JSON) to a SUCCEEDED job's stored record;
  // FailedPrecondition for a job in another state, NotFound if unknown.
  absl::StatusOr<types::JobRecord> AddCalibration(const std::string& id, std::string json);

  // The current record and, for an unfinished job, a subscription (handle
  // != 0): `fn` sees every later change, the final state last. A finished
  // job gets handle 0 and no calls.
  struct Watch {
    types::JobRecord current;
    int64_t handle = 0;
  };
  absl::StatusOr<Watch> Subscribe(const std::string& id, WatchFn fn);
  // Once this returns, the handle's fn is not running and is never called.
  void Unsubscribe(int64_t handle);

  // Ids of unfinished jobs (other than `except_id`) whose request `uses` says yes.
  std::vector<std::string> UnfinishedJobsWhere(
      const std::function<bool(const types::JobRequest&)>& uses,
      const std::string& except_id = "") const;
  int queued() const;
  int running() const;
  // Fleet: whether the last heartbeat reached the store (always true for a
  // single-host store); the live servers of the fleet.
  bool store_reachable() const { return backend_->store_reachable(); }
  absl::StatusOr<std::vector<store::FleetServer>> FleetServers() { return backend_->LiveServers(); }
  // Whether a cancel of job `id`, running here, was requested.
  bool CancelRequested(const std::string& id) const;

  // For JobBackend implementations (jobs/job_backend.h).
  const JobQueueOptions& options() const { return options_; }
  // False once Shutdown began: runners stop taking work.
  bool accepting() const;
  // A record as it enters the queue: QUEUED now, this server's version, no
  // progress, result, times or error from an earlier life.
  void ResetAsQueued(types::JobRecord& job) const;
  // Runs the jobs of this process's FIFO until the queue stops.
  void RunQueued();
  // Runs `claimed` (RUNNING, taken from the store) on the caller's thread;
  // it also stops (CANCELLED) when job `stop_with`, running here, is.
  void RunHere(types::JobRecord claimed, const std::string& stop_with);
  // Copies of the records of the jobs QUEUED or RUNNING here.
  std::vector<types::JobRecord> Active() const;
  // Job `id`, if running here, stops at its next chunk boundary: as
  // CANCELLED, or (`lease_lost`) writing nothing.
  void StopRunning(const std::string& id, bool lease_lost);
  // The ids watched that are not QUEUED or RUNNING here.
  std::vector<std::string> WatchedElsewhere() const;
  // Gives `record` (read from the store) to its watchers unless the job is
  // active here (Publish reports it then); whether it did.
  bool DeliverIfNotHere(const types::JobRecord& record);

  // Stops accepting; QUEUED jobs become INTERRUPTED; RUNNING jobs get
  // `grace` to finish, then stop at their next chunk boundary as INTERRUPTED.
  // Returns when every runner has stopped. Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

 private:
  struct Job {
    types::JobRecord record;
    bool cancel_requested = false;
    bool lease_lost = false;  // fleet: another server took the job over
    std::string stop_with;    // fleet shard run inline: stops when this job is cancelled
    std::chrono::steady_clock::time_point started, last_publish;
  };

  JobQueue(store::ResultStore& store, Runner runner, JobQueueOptions options,
           std::unique_ptr<JobBackend> backend);
  void RunOne(const std::shared_ptr<Job>& job);
  // The final record as this server ended the job, from the runner's result.
  types::JobRecord Finish(Job& job, absl::StatusOr<types::EvalResult> result);
  bool OnProgress(Job& job, const types::EvalProgress& p);
  bool LeaseLost(const Job& job) const;
  // Tells the operators' observer (metrics) the queued/running counts;
  // requires mu_.
  void ReportStates() const;
  void Publish(const types::JobRecord& record);  // under mu_

  store::ResultStore& store_;
  Runner runner_;
  JobQueueOptions options_;
  std::unique_ptr<JobBackend> backend_;

  mutable std::mutex mu_;
  std::condition_variable cv_;                          // work arrived, a job ended, stopping
  std::map<std::string, std::shared_ptr<Job>> active_;  // QUEUED and RUNNING
  std::deque<std::string> queue_;                       // QUEUED here, oldest first
  int running_ = 0;
  bool accepting_ = true;
  bool interrupt_ = false;  // running jobs stop at the next chunk
  bool stopping_ = false;   // runner threads exit
  std::vector<std::thread> threads_;

  mutable std::mutex watch_mu_;  // taken inside mu_ by Publish
  struct Watcher {
    std::string id;
    WatchFn fn;
  };
  // Calls the watchers of `record`'s job (ending them at a final state);
  // under watch_mu_.
  void DeliverLocked(const types::JobRecord& record);
  std::map<int64_t, Watcher> watchers_;
  int64_t next_handle_ = 1;
};

}  // namespace dflash::jobs
