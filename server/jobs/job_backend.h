// File: job_backend.h
// Where a JobQueue's jobs wait and how their records are written: the
// seam between the queue (runners, cancel, watchers; job_queue.h) and the
// one thing that differs between a single server and a fleet.
//   LocalBackend (jobs/local_backend.h): jobs wait in this process, in a
//     bounded FIFO; records go to the store with Put.
//   fleet::FleetBackend (fleet/fleet_backend.h): jobs wait in a shared
//     store; runners claim them there under leases renewed at heartbeats.
// Chosen once, where the server is assembled (app/), from the store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/result_store.h"
#include "types/job_types.h"

namespace dflash::jobs {

class JobQueue;

class JobBackend {
 public:
  virtual ~JobBackend() = default;

  // Once, after the store marked a crash's jobs INTERRUPTED and before the
  // queue exists: reads the last job id; a fleet's server joins the fleet.
  virtual absl::Status Open() = 0;
  // Once, before the runners start. `queue` outlives every other call.
  virtual void Attach(JobQueue& queue) = 0;

  // Under the queue's lock, `job` reset as QUEUED: gives it an id and
  // records it. Returns whether it waits in this process (the queue's FIFO)
  // rather than in the store. ResourceExhausted when the queue is full;
  // `queued_here` is the FIFO's length.
  virtual absl::StatusOr<bool> Record(types::JobRecord& job, int queued_here) = 0;
  // The body of one runner thread; returns once the queue stops.
  virtual void RunLoop() = 0;
  // Wakes runners blocked in RunLoop: the queue is stopping.
  virtual void WakeRunners() {}

  // The RUNNING record as a job starts here.
  virtual void StoreStarted(const types::JobRecord& record) = 0;
  // The record as this server ended the job (`lease_lost`: another server
  // took it over). FailedPrecondition: not written, and not this server's
  // to report. A refused job may become FAILED here.
  virtual absl::Status StoreFinal(types::JobRecord& record, bool lease_lost) = 0;
  // A job that ended here with `status` (not OK) goes back to wait for
  // another server: the outcome its attempt records; nullopt ends it here.
  // `stopping`: the server is stopping.
  virtual std::optional<std::string> HandBack(const absl::Status& status, bool stopping) = 0;

  // Cancel of a job not QUEUED or RUNNING in this process.
  virtual absl::StatusOr<types::JobRecord> CancelElsewhere(const std::string& id,
                                                           std::chrono::milliseconds wait) = 0;
  // A watch of unfinished `stored`, not in this process: true when the
  // backend follows it (JobQueue::DeliverIfNotHere) so the queue subscribes.
  virtual bool WatchElsewhere(const types::JobRecord& stored) = 0;

  // After the runners have stopped: a fleet's server leaves the fleet.
  virtual void Close() {}
  // Whether the last heartbeat reached the store (a single host: always).
  virtual bool store_reachable() const { return true; }
  // The fleet's live servers (NotShared's error without a fleet).
  virtual absl::StatusOr<std::vector<store::FleetServer>> LiveServers() = 0;
};

}  // namespace dflash::jobs
