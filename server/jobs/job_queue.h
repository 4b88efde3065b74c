// File: job_queue.h
// Evaluation jobs: a bounded FIFO served by N runner threads, every state
// change written to a ResultStore, progress pushed to watchers. Knows nothing
// of torch or gRPC: what a job does is the Runner (core/ passes one that calls
// EvalCore::RunEval; tests pass a fake).
//
// States: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED | INTERRUPTED;
// QUEUED -> CANCELLED (CancelEval) | INTERRUPTED (server stopping).
// A SUCCEEDED record is committed to the store before any caller or watcher
// can see that state.
#pragma once

#include <atomic>
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
#include "jobs/job_id.h"
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

// A fleet: several servers share one store (store.shared()). Jobs wait in
// the store, not in memory; each server's runners claim them there under a
// lease they renew every `heartbeat` (job_queue_fleet.cc).
struct FleetOptions {
  std::string server;  // this server's name in the fleet (unique per server)
  std::chrono::milliseconds lease{10000}, heartbeat{2000};
  // How often idle runners look for work and remote watches look for changes.
  std::chrono::milliseconds poll{250};
  int max_attempts = 3;
  // The names resident here now (ClaimRequest's targets, datasets, drafters).
  std::function<store::ClaimRequest()> resident;
  // What this server tells the fleet about itself at each heartbeat (JSON),
  // given the ids of the jobs it runs.
  std::function<std::string(const std::vector<std::string>& running)> info_json;
};

struct JobQueueOptions {
  int max_queued = 64;      // QUEUED jobs at most; more is RESOURCE_EXHAUSTED
  int concurrent_jobs = 1;  // runner threads
  std::string server_version;
  // Watchers get progress (not state changes) at most this often.
  std::chrono::milliseconds progress_interval{200};
  FleetOptions fleet;  // used when the store is shared()
};

class JobQueue {
 public:
  // Marks the jobs a crash left QUEUED or RUNNING as INTERRUPTED, then starts
  // the runners. `store` must outlive the queue.
  static absl::StatusOr<std::unique_ptr<JobQueue>> Create(store::ResultStore& store, Runner runner,
                                                          JobQueueOptions options);
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
  bool store_reachable() const { return store_reachable_; }
  // This server's name in the fleet's servers table ("" without a fleet).
  const std::string& fleet_server() const { return options_.fleet.server; }
  absl::StatusOr<std::vector<store::FleetServer>> FleetServers();

  // Fleet shard jobs (issue 30, core/fleet_shards.h; job_queue_fleet.cc).
  // Records `shard` (its id chosen by the caller) QUEUED unless a job with
  // that id exists already (a parent job run again finds its shards);
  // returns the stored record.
  absl::StatusOr<types::JobRecord> CreateShard(types::JobRecord shard);
  // Claims one job whose id starts with `prefix` (QUEUED, or its lease
  // expired) and runs it on the caller's thread as a runner would, under
  // its own lease; it also stops (CANCELLED) when job `with_job`, running
  // here, is cancelled. Whether one ran.
  bool RunClaimedHere(const std::string& prefix, const std::string& with_job);
  // Whether a cancel of job `id`, running here, was requested.
  bool CancelRequested(const std::string& id) const;
  // How often the fleet's idle runners and remote watches poll the store.
  std::chrono::milliseconds fleet_poll() const { return options_.fleet.poll; }

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

  JobQueue(store::ResultStore& store, Runner runner, JobQueueOptions options, std::string last_id);
  void RunLoop();
  void RunOne(const std::shared_ptr<Job>& job);
  // The final record as this server ended the job, from the runner's result.
  types::JobRecord Finish(Job& job, absl::StatusOr<types::EvalResult> result);

  // Fleet (job_queue_fleet.cc).
  absl::StatusOr<types::JobRecord> SubmitShared(types::JobRecord job);
  absl::StatusOr<types::JobRecord> CancelShared(const std::string& id,
                                                std::chrono::milliseconds wait);
  void RunLoopShared();
  // Registers a claimed job as running here and runs it (RunOne).
  void RunClaimed(types::JobRecord claimed, const std::string& stop_with);
  absl::Status StoreFinalShared(types::JobRecord& record, const Job& job);
  // A job refused here (jobs/refusal.h) goes back to the queue, or becomes
  // FAILED when every live server has refused it.
  void FailIfEveryServerRefused(types::JobRecord& record);
  void FleetLoop();  // heartbeats, lease renewals, remote watches
  void RenewLeases();
  void PollRemoteWatches();
  void StopFleet();
  bool OnProgress(Job& job, const types::EvalProgress& p);
  // Tells the operators' observer (metrics) the queued/running counts;
  // requires mu_.
  void ReportStates() const;
  void Publish(const types::JobRecord& record);  // under mu_
  // A submitted record as it enters the queue: QUEUED now, this server's
  // version, no progress, result, times or error from an earlier life.
  void ResetAsQueued(types::JobRecord& job) const;

  store::ResultStore& store_;
  Runner runner_;
  JobQueueOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // work arrived, a job ended, stopping
  JobIdGenerator ids_;
  std::map<std::string, std::shared_ptr<Job>> active_;  // QUEUED and RUNNING
  std::deque<std::string> queue_;
  int running_ = 0;
  bool accepting_ = true;
  bool interrupt_ = false;  // running jobs stop at the next chunk
  bool stopping_ = false;   // runner threads exit
  std::vector<std::thread> threads_;

  // Fleet state.
  const bool shared_;
  int64_t submitted_ = 0;  // bumped by each submit: wakes idle runners
  std::atomic<bool> store_reachable_{true};
  std::mutex fleet_mu_;
  std::condition_variable fleet_cv_;
  bool fleet_stop_ = false;
  std::thread fleet_thread_;
  std::map<std::string, std::string> remote_seen_;  // watched id -> last record JSON

  std::mutex watch_mu_;  // taken inside mu_ by Publish
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
