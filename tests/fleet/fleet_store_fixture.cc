#include "fleet_store_fixture.h"

#include <chrono>
#include <utility>

namespace dflash::testing {

using namespace std::chrono_literals;

constexpr auto kHang = 30s;

fleet::FleetOptions QuickFleetOptions(const std::string& name) {
  fleet::FleetOptions options;
  options.server = name;
  options.lease = 2000ms;
  options.heartbeat = 100ms;
  options.poll = 20ms;
  options.resident = [] {
    store::ClaimRequest c;
    c.targets = {"t"};
    c.datasets = {"d"};
    c.drafters = {"m"};
    return c;
  };
  return options;
}

types::JobRecord NamedJob(const std::string& run) {
  types::JobRecord job;
  job.request.run = run;
  job.request.params.checkpoint_path = "/ckpt";
  job.request.params.target = "t";
  job.request.params.dataset = "d";
  return job;
}

void FleetStoreTest::SetUp() {
  PostgresTest::SetUp();
  if (HasFatalFailure()) return;
  auto store = store::PostgresResultStore::Open(url_, "");
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(store).value();
}

void FleetStoreTest::TearDown() {
  queue_.reset();
  store_.reset();
}

void FleetStoreTest::StartQueue(fleet::FleetOptions options, jobs::Runner runner, int concurrent) {
  jobs::JobQueueOptions q;
  q.concurrent_jobs = concurrent;
  q.progress_interval = 0ms;
  auto backend = std::make_unique<fleet::FleetBackend>(*store_, std::move(options));
  backend_ = backend.get();
  auto queue = jobs::JobQueue::Create(*store_, std::move(runner), q, std::move(backend));
  ASSERT_TRUE(queue.ok()) << queue.status();
  queue_ = std::move(queue).value();
}

void RunnerGate::Enter(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  entered_.insert(id);
  cv_.notify_all();
  cv_.wait_for(lock, kHang, [&] { return open_; });
}

bool RunnerGate::WaitEntered(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, kHang, [&] { return entered_.count(id) > 0; });
}

void RunnerGate::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
  cv_.notify_all();
}

}  // namespace dflash::testing
