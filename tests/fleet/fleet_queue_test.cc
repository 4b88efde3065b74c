// JobQueue on a shared PostgreSQL store (a real one, fleet_store_fixture.h)
// with a fake runner that works in "chunks"
// until told to stop: a server whose lease is taken over stops the job at
// the next chunk boundary and writes nothing; a server that stops hands its
// running job back to the queue.
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fleet/fleet_backend.h"
#include "fleet_store_fixture.h"
#include "gtest/gtest.h"
#include "jobs/job_queue.h"

namespace dflash {
namespace {

using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

class FleetQueueTest : public testing::FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    if (HasFatalFailure()) return;
    fleet::FleetOptions options = testing::QuickFleetOptions("q1");
    options.lease = 1000ms;
    options.poll = 50ms;
    // Chunks of 10 ms until the queue says stop (or 30 s pass).
    jobs::Runner runner =
        [this](const JobRecord&,
               const types::ProgressFn& progress) -> absl::StatusOr<types::EvalResult> {
      for (int i = 0; i < 3000; ++i) {
        types::EvalProgress p;
        p.blocks_done = i;
        p.blocks_total = 3000;
        if (!progress(p)) {
          stopped_ = true;
          return absl::CancelledError("stopped at a chunk boundary");
        }
        std::this_thread::sleep_for(10ms);
      }
      return types::EvalResult{};
    };
    StartQueue(std::move(options), std::move(runner));
  }

  std::string SubmitAndWaitRunning() {
    JobRecord job;
    job.request.params.checkpoint_path = "/ckpt";
    job.request.params.dataset = "d";
    job.request.params.target = "t";
    auto submitted = queue_->Submit(job);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    for (int i = 0; i < 500; ++i) {
      if (queue_->running() == 1) return submitted->id;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "the job never ran";
    return submitted->id;
  }

  std::atomic<bool> stopped_{false};
};

TEST_F(FleetQueueTest, ALostLeaseStopsTheJobAndWritesNothing) {
  const std::string id = SubmitAndWaitRunning();
  EXPECT_EQ(Sql("SELECT owner || ' ' || attempt || ' ' || state FROM jobs"), "q1 1 RUNNING");
  // Another server took it over (as after an expired lease) and holds it for
  // an hour, so q1 cannot take it back when the old lease runs out.
  Sql(absl::StrCat("UPDATE jobs SET owner = 'thief', attempt = 2, ",
                   "lease_until = lease_until + 3600000000 WHERE id = '", id, "'"));
  for (int i = 0; i < 300 && queue_->running() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(queue_->running(), 0);
  EXPECT_TRUE(stopped_);
  std::this_thread::sleep_for(300ms);  // a few heartbeats: still nothing written
  EXPECT_EQ(Sql("SELECT owner || ' ' || attempt || ' ' || state FROM jobs"), "thief 2 RUNNING");
  EXPECT_EQ(store_->Get(id)->attempts.size(), 1u);  // the record as the claim wrote it
}

TEST_F(FleetQueueTest, AStoppingServerHandsItsRunningJobBack) {
  const std::string id = SubmitAndWaitRunning();
  queue_->Shutdown(0ms);
  EXPECT_TRUE(stopped_);
  EXPECT_EQ(Sql("SELECT '[' || owner || '] ' || state FROM jobs"), "[] QUEUED");
  JobRecord r = *store_->Get(id);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].server, "q1");
  EXPECT_EQ(r.attempts[0].outcome, "handed back: the server stopped");
  EXPECT_EQ(Sql("SELECT count(*) FROM servers"), "0");  // it left the fleet
}

TEST_F(FleetQueueTest, MaxQueuedBoundsTheFleetsQueueInTheDatabase) {
  // A second server of the fleet with room for two queued jobs; the jobs
  // need a dataset no server holds, so they stay queued.
  jobs::JobQueueOptions options;
  options.max_queued = 2;
  fleet::FleetOptions fleet;
  fleet.server = "q2";
  fleet.poll = 50ms;
  fleet.resident = [] { return store::ClaimRequest{}; };
  auto q2 = jobs::JobQueue::Create(
      *store_, [](const JobRecord&, const types::ProgressFn&) { return types::EvalResult{}; },
      options, std::make_unique<fleet::FleetBackend>(*store_, std::move(fleet)));
  ASSERT_TRUE(q2.ok()) << q2.status();
  JobRecord job;
  job.request.params.checkpoint_path = "/ckpt";
  job.request.params.dataset = "nowhere";
  ASSERT_TRUE(queue_->Submit(job).ok());  // through q1: the fleet's queue holds it
  ASSERT_TRUE((*q2)->Submit(job).ok());
  auto refused = (*q2)->Submit(job);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "the fleet's queue is full (2 queued, limit 2); retry when jobs finish");
  EXPECT_EQ(Sql("SELECT count(*) FROM jobs"), "2");
  Sql("UPDATE jobs SET state = 'CANCELLED' WHERE id = (SELECT min(id) FROM jobs)");
  EXPECT_TRUE((*q2)->Submit(job).ok());  // a place freed
  (*q2)->Shutdown(0ms);
}

}  // namespace
}  // namespace dflash
