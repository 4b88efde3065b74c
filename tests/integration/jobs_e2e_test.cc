// Evaluation jobs against the real dflash-evald on the tiny generated
// fixture: concurrent submits, watch, cancel (queued and running), results
// equal to RunEval's, unload refused while jobs use an object, compare and
// the training curve. Durability across kill -9 and SIGTERM, and a full
// queue: jobs_durability_e2e_test.cc.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/eval_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/jobs_e2e_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::ExpectSameNumbers;
using ::dflash::testing::JobRequest;
using ::dflash::testing::JobsE2eTest;
using ::testing::HasSubstr;
using Client = ::dflash::testing::JobClient;
using namespace std::chrono_literals;

// Four clients submit two jobs each at once: a training curve, steps 0..7.
// Returns the jobs' ids by step.
std::vector<std::string> SubmitCurve(const std::string& address) {
  std::vector<std::string> ids(8);
  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&, c] {
      Client client(address);
      for (int k = 0; k < 2; ++k) {
        const int step = c * 2 + k;
        pb::EvalRequest r = JobRequest("d", 1 + step % 6);
        r.set_run("curve");
        r.set_step(step * 1000);
        (*r.mutable_labels())["client"] = absl::StrCat(c);
        pb::EvalJob job;
        grpc::Status s = client.TrySubmit(r, &job);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
        ids[step] = job.id();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 8u);
  return ids;
}

// A watch of one job from the queue to the end, on its own client.
struct Watch {
  std::vector<pb::EvalJob> seen;
  grpc::Status status;
  std::thread thread;
};

void StartWatch(const std::string& address, const std::string& id, Watch* w) {
  w->thread = std::thread([address, id, w] {
    Client client(address);
    grpc::ClientContext ctx;
    pb::WatchEvalRequest req;
    req.set_id(id);
    auto reader = client.stub->WatchEval(&ctx, req);
    pb::EvalJob job;
    while (reader->Read(&job)) w->seen.push_back(job);
    w->status = reader->Finish();
  });
}

// The watch saw the job queued, then done with a result, its progress
// never going back.
void ExpectWatchedToTheEnd(Watch& w) {
  w.thread.join();
  EXPECT_TRUE(w.status.ok()) << w.status.error_message();
  ASSERT_GE(w.seen.size(), 2u);
  EXPECT_EQ(w.seen.front().state(), pb::JOB_STATE_QUEUED);
  EXPECT_EQ(w.seen.back().state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(w.seen.back().has_result());
  for (size_t i = 1; i < w.seen.size(); ++i) {
    EXPECT_GE(w.seen[i].progress().blocks_done(), w.seen[i - 1].progress().blocks_done());
  }
}

// One queued job cancelled at once: one job runs and eight wait.
void CancelQueued(Client& main) {
  pb::EvalJob queued;
  ASSERT_TRUE(main.TrySubmit(JobRequest("d"), &queued).ok());
  pb::EvalJob cancelled;
  ASSERT_TRUE(main.Cancel(queued.id(), &cancelled).ok());
  EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED);
  pb::GetServerInfoRequest info_req;
  pb::ServerInfo info;
  ASSERT_TRUE(main.Call(&pb::DrafterEval::Stub::GetServerInfo, info_req, &info).ok());
  EXPECT_EQ(info.running_jobs(), 1);
  EXPECT_EQ(info.queued_jobs(), 8);
}

// Unloading what queued jobs use is refused, naming them.
void ExpectUnloadRefused(client::EvalClient& admin, const std::string& longjob_id) {
  auto unload = admin.Unload(pb::RESOURCE_KIND_DATASET, "big");
  EXPECT_THAT(unload,
              testing::StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(longjob_id)));
  unload = admin.Unload(pb::RESOURCE_KIND_DRAFTER, "m");
  EXPECT_THAT(unload, testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("is used by queued or running jobs")));
}

// The running job cancelled at a chunk boundary, part done; a second cancel
// is refused.
void CancelRunning(Client& main, const std::string& longjob_id) {
  pb::EvalJob cancelled;
  ASSERT_TRUE(main.Cancel(longjob_id, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED) << cancelled.DebugString();
  EXPECT_GT(cancelled.progress().blocks_done(), 0);
  EXPECT_LT(cancelled.progress().blocks_done(), cancelled.progress().blocks_total());
  EXPECT_FALSE(cancelled.has_result());
  pb::EvalJob again;
  grpc::Status late = main.Cancel(longjob_id, &again);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(late.error_message(), HasSubstr("already finished (CANCELLED)"));
}

// Every curve job succeeds with RunEval's numbers.
void ExpectCurveSucceeded(Client& main, const std::vector<std::string>& ids) {
  for (int step = 0; step < 8; ++step) {
    pb::EvalJob done = main.WaitDone(ids[step]);
    ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
    EXPECT_EQ(done.request().step(), step * 1000);
    EXPECT_TRUE(done.has_start_time() && done.has_end_time());
    EXPECT_FALSE(done.result().dataset_fingerprint().empty());
    EXPECT_FALSE(done.result().drafter_fingerprint().empty());
    if (step % 3 == 0) ExpectSameNumbers(done.result(), main.RunEval(done.request()));
  }
}

// The training curve: by run, step ascending, across pages; filtered by
// steps and labels; by state.
void ExpectCurveListed(Client& main) {
  pb::ListEvalsRequest curve;
  curve.set_run("curve");
  curve.set_order_by_step(true);
  curve.set_page_size(3);
  std::vector<int64_t> steps;
  int pages = 0;
  do {
    pb::ListEvalsResponse page = main.List(curve);
    ++pages;
    for (const pb::EvalJob& j : page.jobs()) steps.push_back(j.request().step());
    curve.set_page_token(page.next_page_token());
  } while (!curve.page_token().empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_THAT(steps, ::testing::ElementsAre(0, 1000, 2000, 3000, 4000, 5000, 6000, 7000));
  pb::ListEvalsRequest filtered;
  filtered.set_run("curve");
  filtered.set_min_step(2000);
  filtered.set_max_step(4000);
  (*filtered.mutable_labels())["client"] = "1";
  pb::ListEvalsResponse f = main.List(filtered);
  ASSERT_EQ(f.jobs_size(), 2);
  EXPECT_EQ(f.jobs(0).request().step(), 3000);  // newest first
  pb::ListEvalsRequest by_state;
  by_state.set_state(pb::JOB_STATE_CANCELLED);
  EXPECT_EQ(main.List(by_state).jobs_size(), 2);
}

// Compare: the same data in another layout is another dataset. Sets
// `full_id` to the job on d.
void ExpectCompared(Client& main, const std::string& curve_id, const std::string& cancelled_id,
                    std::string* full_id) {
  pb::EvalJob split;
  ASSERT_TRUE(main.TrySubmit(JobRequest("split"), &split).ok());
  pb::EvalJob full;
  ASSERT_TRUE(main.TrySubmit(JobRequest("d"), &full).ok());
  ASSERT_EQ(main.WaitDone(split.id()).state(), pb::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(main.WaitDone(full.id()).state(), pb::JOB_STATE_SUCCEEDED);
  pb::CompareEvalsRequest cmp;
  cmp.add_ids(full.id());
  cmp.add_ids(split.id());
  cmp.add_ids(curve_id);
  cmp.set_allow_recipe_mismatch(true);  // other data and another sample limit, as warnings
  pb::CompareEvalsResponse compared;
  grpc::Status cs = main.Call(&pb::DrafterEval::Stub::CompareEvals, cmp, &compared);
  ASSERT_TRUE(cs.ok()) << cs.error_message();
  ASSERT_EQ(compared.jobs_size(), 3);
  ASSERT_EQ(compared.accept_length_size(), 3);
  EXPECT_EQ(compared.accept_length(1), compared.accept_length(0));  // same samples, same numbers
  EXPECT_EQ(compared.accept_length_delta(0), 0);
  ASSERT_GT(compared.positions_size(), 0);
  EXPECT_EQ(compared.positions(0).accuracy_size(), 3);
  EXPECT_THAT(
      absl::StrJoin(compared.warnings(), "\n"),
      HasSubstr("recipe of " + split.id() + " differs from " + full.id() + ": dataset: h64:"));
  EXPECT_THAT(absl::StrJoin(compared.warnings(), "\n"),
              HasSubstr("recipe of " + curve_id + " differs from " + full.id() +
                        ": samples: all vs at most 1"));
  cmp.add_ids(cancelled_id);
  cs = main.Call(&pb::DrafterEval::Stub::CompareEvals, cmp, &compared);
  EXPECT_EQ(cs.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(cs.error_message(), HasSubstr("is CANCELLED; only SUCCEEDED jobs can be compared"));
  cmp.set_ids(3, "ev-00000000-000000-0000");
  cs = main.Call(&pb::DrafterEval::Stub::CompareEvals, cmp, &compared);
  EXPECT_EQ(cs.error_code(), grpc::StatusCode::NOT_FOUND);
  *full_id = full.id();
}

// The training-loop call: a checkpoint path, labels, unload_after; the
// same numbers as the resident drafter's job `full_id`; resubmitted.
void RunTrainingLoopCall(Client& main, const std::string& data, const std::string& full_id) {
  pb::EvalRequest ckpt = JobRequest("d");
  ckpt.clear_drafter();
  ckpt.set_checkpoint_path(data + "/drafter-pt");
  ckpt.set_run("loop");
  ckpt.set_step(4000);
  ckpt.set_unload_after(true);
  pb::EvalJob loop;
  ASSERT_TRUE(main.TrySubmit(ckpt, &loop).ok());
  pb::EvalJob loop_done = main.WaitDone(loop.id());
  ASSERT_EQ(loop_done.state(), pb::JOB_STATE_SUCCEEDED) << loop_done.error_message();
  ExpectSameNumbers(loop_done.result(), main.Get(full_id).result());  // same weights
  pb::EvalJob re;
  ASSERT_TRUE(main.Resubmit(loop.id(), &re).ok());
  EXPECT_EQ(re.resubmitted_from(), loop.id());
  EXPECT_EQ(main.WaitDone(re.id()).state(), pb::JOB_STATE_SUCCEEDED);
}

// Bad submits are refused before queueing; a checkpoint that does not load
// fails its job.
void ExpectBadSubmitsRefused(Client& main, const std::string& data) {
  pb::EvalJob bad;
  grpc::Status s = main.TrySubmit(JobRequest("nope"), &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("no resident dataset named 'nope'"));
  pb::EvalRequest both = JobRequest("d");
  both.set_checkpoint_path(data + "/drafter-pt");
  s = main.TrySubmit(both, &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A checkpoint that does not load fails the job with the load's error.
  pb::EvalRequest missing = JobRequest("d");
  missing.clear_drafter();
  missing.set_checkpoint_path(data + "/no-such-drafter");
  pb::EvalJob failed;
  ASSERT_TRUE(main.TrySubmit(missing, &failed).ok());
  pb::EvalJob failed_done = main.WaitDone(failed.id());
  EXPECT_EQ(failed_done.state(), pb::JOB_STATE_FAILED);
  EXPECT_EQ(failed_done.error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

TEST_F(JobsE2eTest, ConcurrentClientsWatchCancelCompareAndHistory) {
  auto server = Start("state-main");
  ASSERT_NE(server, nullptr);
  Load(server->address());
  Client main(server->address());

  // A long job occupies the single runner.
  pb::EvalJob longjob;
  ASSERT_TRUE(main.TrySubmit(JobRequest("big"), &longjob).ok());
  EXPECT_EQ(longjob.state(), pb::JOB_STATE_QUEUED);
  EXPECT_THAT(longjob.id(), ::testing::MatchesRegex("ev-[0-9]{8}-[0-9]{6}-[0-9]{4}"));
  main.WaitRunning(longjob.id());

  std::vector<std::string> ids = SubmitCurve(server->address());
  Watch watch;
  StartWatch(server->address(), ids[5], &watch);
  ASSERT_NO_FATAL_FAILURE(CancelQueued(main));
  client::EvalClient admin(server->address(), 60s);
  ExpectUnloadRefused(admin, longjob.id());
  ASSERT_NO_FATAL_FAILURE(CancelRunning(main, longjob.id()));
  ASSERT_NO_FATAL_FAILURE(ExpectCurveSucceeded(main, ids));
  ASSERT_NO_FATAL_FAILURE(ExpectWatchedToTheEnd(watch));
  ASSERT_NO_FATAL_FAILURE(ExpectCurveListed(main));
  std::string full_id;
  ASSERT_NO_FATAL_FAILURE(ExpectCompared(main, ids[0], longjob.id(), &full_id));
  ASSERT_NO_FATAL_FAILURE(RunTrainingLoopCall(main, data_, full_id));
  ASSERT_NO_FATAL_FAILURE(ExpectBadSubmitsRefused(main, data_));

  // Nothing in use any more: unloading works.
  EXPECT_OK(admin.Unload(pb::RESOURCE_KIND_DATASET, "big").status());
}

}  // namespace
}  // namespace dflash
