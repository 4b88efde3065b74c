// File: store/result_store.h
// Durable job records: every evaluation job, its request and its full result.
// Callers (jobs/, core/) see only this narrow interface. SqliteResultStore
// serves one host; PostgresResultStore is shared by a fleet of servers (one
// database): shared() says so, and the fleet operations below (claims,
// leases, cancel requests, the servers table) are then what the queue uses.
// Nothing here assumes either engine (page tokens are opaque, filters are
// plain values, labels are matched exactly).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "types/job_types.h"

namespace dflash::store {

// What a fleet server can run, for Claim: jobs that name resident objects
// by name go only to servers holding them.
struct ClaimRequest {
  std::string server;                                    // this server's fleet name
  std::vector<std::string> targets, datasets, drafters;  // resident names
  // The source paths of the resident targets and datasets: a job naming one
  // by path is preferred by a server holding it (affinity).
  std::vector<std::string> target_paths, dataset_paths;
  int64_t lease_micros = 10'000'000;
  int max_attempts = 3;  // a job whose lease expired this often becomes FAILED
  // Only jobs whose id starts with this ("": any): a fleet job's server
  // runs its own shard jobs while it waits for them (fleet/fleet_shards.h).
  std::string id_prefix;
};

// One live server of a fleet: its name, what it says about itself (JSON
// written by core/: address, device, memory, resident objects, running
// jobs) and how long ago it said so.
struct FleetServer {
  std::string name, info_json;
  int64_t heartbeat_age_micros = 0;
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;

  // Inserts or replaces the record with this id, in one transaction. A record
  // in state SUCCEEDED is on stable storage when this returns OK.
  virtual absl::Status Put(const types::JobRecord& record) = 0;
  // NotFound for an unknown id.
  virtual absl::StatusOr<types::JobRecord> Get(const std::string& id) = 0;
  // InvalidArgument for a malformed page token.
  virtual absl::StatusOr<types::JobPage> List(const types::ListQuery& query) = 0;
  // At startup: every QUEUED or RUNNING record (left by a crash) becomes
  // INTERRUPTED with interrupted_by_restart set. Returns the ids changed.
  virtual absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(
      int64_t now_unix_micros) = 0;
  // The greatest job id stored ("" when empty): new ids sort after it.
  virtual absl::StatusOr<std::string> MaxId() = 0;

  // ---- Fleet operations: only a shared() store implements them. ----
  virtual bool shared() const { return false; }
  // Inserts a new record; AlreadyExists when the id is taken (ids are made
  // by each server, so two may collide).
  virtual absl::Status Create(const types::JobRecord& record) { return Put(record); }
  // Takes the oldest job this server may run: QUEUED, or RUNNING with an
  // expired lease (the next attempt, from the start). The record comes back
  // RUNNING on `server` with the attempt appended. nullopt when none. Jobs
  // past max_attempts become FAILED naming each attempt's server.
  virtual absl::StatusOr<std::optional<types::JobRecord>> Claim(const ClaimRequest& request);
  // Writes `record` (its last attempt must be this server's) only while this
  // server still holds the job, renewing the lease when RUNNING, ending it
  // otherwise (QUEUED hands the job back). Returns whether a cancel was
  // requested. FailedPrecondition "lease lost" when the job is no longer ours.
  virtual absl::StatusOr<bool> PutLeased(const types::JobRecord& record, int64_t lease_micros);
  // QUEUED: CANCELLED at once. RUNNING: flags it; its server stops it.
  // FailedPrecondition for a finished job, NotFound for an unknown one.
  virtual absl::StatusOr<types::JobRecord> RequestCancel(const std::string& id,
                                                         int64_t now_unix_micros);
  // The servers table: this server's heartbeat, the live ones, leaving.
  virtual absl::Status Heartbeat(const std::string& server, const std::string& info_json);
  virtual absl::StatusOr<std::vector<FleetServer>> LiveServers(int64_t max_age_micros);
  virtual absl::Status Leave(const std::string& server);
  // The fleet's QUEUED jobs (what --max-queued bounds in a fleet).
  virtual absl::StatusOr<int64_t> CountQueued();
};

}  // namespace dflash::store
