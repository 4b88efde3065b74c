// File: fleet_store_fixture.h
// What the in-process tests of fleet/ share: one real PostgreSQL for the
// suite and a database for each test (test_util/postgres_fixture.h), a
// PostgresResultStore on it, and this process's fleet server: a
// FleetBackend under a JobQueue running the test's runner. Other servers
// of the fleet are the test writing to the store as they would.
//
//   TEST_F(FleetStoreTest, X) { StartQueue(QuickFleetOptions("here"), runner); ... }
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "fleet/fleet_backend.h"
#include "jobs/job_queue.h"
#include "store/postgres_result_store.h"
#include "test_util/postgres_fixture.h"

namespace dflash::testing {

// Fleet server `name` with a 2 s lease, heartbeats every 100 ms, polls every
// 20 ms; target t, dataset d and drafter m resident.
fleet::FleetOptions QuickFleetOptions(const std::string& name);

// A job that names its objects by resident name: target t, dataset d,
// checkpoint /ckpt; `run` says what the test's runner does with it.
types::JobRecord NamedJob(const std::string& run);

class FleetStoreTest : public PostgresTest {
 protected:
  void SetUp() override;     // store_ on the test's database
  void TearDown() override;  // the queue stops before the store closes

  // queue_ over a FleetBackend (backend_) with `options`, running `runner`
  // on `concurrent` runner threads.
  void StartQueue(fleet::FleetOptions options, jobs::Runner runner, int concurrent = 1);

  std::unique_ptr<store::PostgresResultStore> store_;
  fleet::FleetBackend* backend_ = nullptr;  // queue_'s
  std::unique_ptr<jobs::JobQueue> queue_;
};

// Where a runner holds its jobs until the test lets them go: each job that
// Enter()s is recorded and waits for Open(). Waits end after 30 s (a
// failure, never a success).
class RunnerGate {
 public:
  void Enter(const std::string& id);
  // True once job `id` has entered.
  [[nodiscard]] bool WaitEntered(const std::string& id);
  void Open();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> entered_;
  bool open_ = false;
};

}  // namespace dflash::testing
