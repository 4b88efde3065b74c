// File: fleet_backend.h
// The JobBackend of a fleet's server (jobs/job_backend.h): several servers
// share one store (store.shared()). Jobs wait in the store, not in this
// process; each server's runners claim them there under a lease renewed at
// every heartbeat, a job running elsewhere is cancelled and watched through
// the store, and a job refused here (fleet/refusal.h) goes back for another
// server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jobs/job_backend.h"
#include "jobs/job_id.h"
#include "jobs/job_queue.h"

namespace dflash::fleet {

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

class FleetBackend final : public jobs::JobBackend {
 public:
  // `store` (shared()) must outlive the backend.
  FleetBackend(store::ResultStore& store, FleetOptions options);
  ~FleetBackend() override;  // Close()

  // InvalidArgument without a server name or the resident names; else joins
  // the fleet (a first heartbeat).
  absl::Status Open() override;
  void Attach(jobs::JobQueue& queue) override;
  absl::StatusOr<bool> Record(types::JobRecord& job, int queued_here) override;
  void RunLoop() override;
  void WakeRunners() override;
  void StoreStarted(const types::JobRecord&) override {}  // the claim stored it
  absl::Status StoreFinal(types::JobRecord& record, bool lease_lost) override;
  std::optional<std::string> HandBack(const absl::Status& status, bool stopping) override;
  absl::StatusOr<types::JobRecord> CancelElsewhere(const std::string& id,
                                                   std::chrono::milliseconds wait) override;
  bool WatchElsewhere(const types::JobRecord& stored) override;
  void Close() override;
  bool store_reachable() const override { return store_reachable_; }
  absl::StatusOr<std::vector<store::FleetServer>> LiveServers() override;

  // Shard jobs (issue 30, fleet/fleet_shards.h).
  // Records `shard` (its id chosen by the caller) QUEUED unless a job with
  // that id exists already (a parent job run again finds its shards);
  // returns the stored record.
  absl::StatusOr<types::JobRecord> CreateShard(types::JobRecord shard);
  // Claims one job whose id starts with `prefix` (QUEUED, or its lease
  // expired) and runs it on the caller's thread as a runner would, under
  // its own lease; it also stops (CANCELLED) when job `with_job`, running
  // here, is cancelled. Whether one ran.
  bool RunClaimedHere(const std::string& prefix, const std::string& with_job);
  const std::string& server() const { return options_.server; }
  // How often idle runners and remote watches poll the store.
  std::chrono::milliseconds poll() const { return options_.poll; }

 private:
  store::ClaimRequest Claim(const std::string& prefix) const;
  void WakeIdleRunners();  // a job was recorded
  // A refused job becomes FAILED when every live server has refused it.
  void FailIfEveryServerRefused(types::JobRecord& record);
  void Loop();  // heartbeats, lease renewals, remote watches
  void Heartbeat();
  void RenewLeases();
  void PollRemoteWatches();

  store::ResultStore& store_;
  const FleetOptions options_;
  jobs::JobQueue* queue_ = nullptr;
  jobs::JobIdGenerator ids_;  // under the queue's lock (Record)
  std::atomic<bool> store_reachable_{true};

  std::mutex wake_mu_;
  std::condition_variable wake_cv_;  // work recorded, stopping
  int64_t submitted_ = 0;            // bumped by each record: wakes idle runners
  bool runners_stop_ = false;

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool loop_stop_ = false;
  std::thread loop_thread_;

  // A job watched here that runs elsewhere: its record as last delivered.
  struct Seen {
    std::string json;
    bool fresh = true;  // not yet in a poll's watched ids: kept once
  };
  std::mutex seen_mu_;
  std::map<std::string, Seen> remote_seen_;  // by job id
};

// A lease or heartbeat period as the store's microseconds.
inline int64_t Micros(std::chrono::milliseconds d) {
  return static_cast<int64_t>(d.count()) * 1000;
}

}  // namespace dflash::fleet
