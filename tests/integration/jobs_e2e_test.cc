// Evaluation jobs against the real dflash-evald on the tiny generated
// fixture: concurrent submits, watch, cancel (queued and running), results
// equal to RunEval's, unload refused while jobs use an object, compare, the
// training curve, and durability across kill -9 and SIGTERM.
#include <signal.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/eval_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kBigSamples = 900;  // 150 copies of the tiny dataset: seconds of real work

// A raw stub per "client", each on its own channel.
struct Client {
  explicit Client(const std::string& address)
      : stub(pb::DrafterEval::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (pb::DrafterEval::Stub::*method)(grpc::ClientContext*, const Req&,
                                                                  Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    return (stub.get()->*method)(&ctx, req, resp);
  }
  grpc::Status Submit(const pb::EvalRequest& r, pb::EvalJob* job) {
    pb::SubmitEvalRequest req;
    *req.mutable_request() = r;
    return Call(&pb::DrafterEval::Stub::SubmitEval, req, job);
  }
  pb::EvalJob Get(const std::string& id) {
    pb::GetEvalRequest req;
    req.set_id(id);
    pb::EvalJob job;
    grpc::Status s = Call(&pb::DrafterEval::Stub::GetEval, req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }
  grpc::Status Cancel(const std::string& id, pb::EvalJob* job) {
    pb::CancelEvalRequest req;
    req.set_id(id);
    return Call(&pb::DrafterEval::Stub::CancelEval, req, job);
  }
  grpc::Status Resubmit(const std::string& id, pb::EvalJob* job) {
    pb::ResubmitEvalRequest req;
    req.set_id(id);
    return Call(&pb::DrafterEval::Stub::ResubmitEval, req, job);
  }
  pb::ListEvalsResponse List(pb::ListEvalsRequest req) {
    pb::ListEvalsResponse resp;
    grpc::Status s = Call(&pb::DrafterEval::Stub::ListEvals, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  pb::EvalResult RunEval(const pb::EvalRequest& r) {
    pb::RunEvalRequest req;
    *req.mutable_request() = r;
    pb::EvalResult result;
    grpc::Status s = Call(&pb::DrafterEval::Stub::RunEval, req, &result);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return result;
  }
  // Polls until the job leaves QUEUED/RUNNING.
  pb::EvalJob WaitDone(const std::string& id) {
    for (int i = 0; i < 3000; ++i) {
      pb::EvalJob job = Get(id);
      if (job.state() != pb::JOB_STATE_QUEUED && job.state() != pb::JOB_STATE_RUNNING) return job;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "job " << id << " did not finish";
    return {};
  }
  // Polls until the job is RUNNING with some progress.
  void WaitRunning(const std::string& id) {
    for (int i = 0; i < 3000; ++i) {
      pb::EvalJob job = Get(id);
      if (job.state() == pb::JOB_STATE_RUNNING && job.progress().blocks_done() > 0) return;
      ASSERT_TRUE(job.state() == pb::JOB_STATE_QUEUED || job.state() == pb::JOB_STATE_RUNNING)
          << job.DebugString();
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << "job " << id << " never ran";
  }

  std::unique_ptr<pb::DrafterEval::Stub> stub;
};

pb::EvalRequest Request(const std::string& dataset, int max_samples = 0) {
  pb::EvalRequest r;
  r.set_drafter("m");
  r.set_dataset(dataset);
  r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  r.set_max_samples(max_samples);
  return r;
}

// Results equal apart from wall-clock timings and which process ran them
// (a shard's seconds and server, "host:pid").
void ExpectSameNumbers(pb::EvalResult got, pb::EvalResult want) {
  for (pb::EvalResult* r : {&got, &want}) {
    r->clear_setup_seconds();
    r->clear_compute_seconds();
    r->clear_tokens_per_second();
    for (pb::ShardPlacement& s : *r->mutable_shards()) {
      s.clear_seconds();
      s.clear_server();
    }
  }
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(got, want)) << diff;
  EXPECT_GT(want.positions_size(), 0);
  EXPECT_GT(want.per_sample_size(), 0);
}

class JobsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Two spinning OpenMP threads per server on a busy 2-core machine make
    // timings erratic; passive waiting keeps the suite fast.
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    dir_ = new testing::TempDir();
    data_ = dir_->Join("data");
    testing::MakeTinyFixture(data_);
    ASSERT_FALSE(::testing::Test::HasFailure());
    // A long dataset: the tiny one's samples many times over.
    fs::create_directories(data_ + "/big/rows");
    fs::copy_file(data_ + "/dataset/dataset.json", data_ + "/big/dataset.json");
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(data_ + "/dataset")) {
      if (e.path().extension() == ".ckpt") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    ASSERT_FALSE(files.empty());
    for (int k = 0; k < kBigSamples; ++k) {
      fs::create_hard_link(files[k % files.size()],
                           absl::StrCat(data_, "/big/rows/data_", k, ".ckpt"));
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  std::unique_ptr<ServerProcess> Start(const std::string& state,
                                       std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--data-root", data_});
    auto server = ServerProcess::Start(dir_->Join(state), extra);
    EXPECT_OK(server.status());
    return server.ok() ? std::move(server).value() : nullptr;
  }

  static void Load(const std::string& address, bool big = true) {
    client::EvalClient c(address, 60s);
    pb::LoadTargetRequest t;
    t.set_name("t");
    t.set_path(data_ + "/target");
    ASSERT_OK(c.LoadTarget(t).status());
    for (auto [name, path] : {std::pair<std::string, std::string>{"d", "/dataset"},
                              {"split", "/dataset-split"},
                              {"big", "/big"}}) {
      if (name == "big" && !big) continue;
      pb::LoadDatasetRequest d;
      d.set_name(name);
      d.set_path(data_ + path);
      ASSERT_OK(c.LoadDataset(d).status());
    }
    pb::LoadDrafterRequest m;
    m.set_name("m");
    m.set_path(data_ + "/drafter");
    ASSERT_OK(c.LoadDrafter(m).status());
  }

  static testing::TempDir* dir_;
  static std::string data_;
};

testing::TempDir* JobsE2eTest::dir_ = nullptr;
std::string JobsE2eTest::data_;

TEST_F(JobsE2eTest, ConcurrentClientsWatchCancelCompareAndHistory) {
  auto server = Start("state-main");
  ASSERT_NE(server, nullptr);
  Load(server->address());
  Client main(server->address());

  // A long job occupies the single runner.
  pb::EvalJob longjob;
  ASSERT_TRUE(main.Submit(Request("big"), &longjob).ok());
  EXPECT_EQ(longjob.state(), pb::JOB_STATE_QUEUED);
  EXPECT_THAT(longjob.id(), ::testing::MatchesRegex("ev-[0-9]{8}-[0-9]{6}-[0-9]{4}"));
  main.WaitRunning(longjob.id());

  // Four clients submit two jobs each at once: a training curve, steps 0..7.
  std::vector<std::string> ids(8);
  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&, c] {
      Client client(server->address());
      for (int k = 0; k < 2; ++k) {
        const int step = c * 2 + k;
        pb::EvalRequest r = Request("d", 1 + step % 6);
        r.set_run("curve");
        r.set_step(step * 1000);
        (*r.mutable_labels())["client"] = absl::StrCat(c);
        pb::EvalJob job;
        grpc::Status s = client.Submit(r, &job);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
        ids[step] = job.id();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 8u);

  // Watch one of them from the queue to the end, on its own client.
  std::vector<pb::EvalJob> seen;
  grpc::Status watch_status;
  std::thread watcher([&] {
    Client client(server->address());
    grpc::ClientContext ctx;
    pb::WatchEvalRequest req;
    req.set_id(ids[5]);
    auto reader = client.stub->WatchEval(&ctx, req);
    pb::EvalJob job;
    while (reader->Read(&job)) seen.push_back(job);
    watch_status = reader->Finish();
  });

  // One queued job cancelled at once; the running one at a chunk boundary.
  pb::EvalJob queued;
  ASSERT_TRUE(main.Submit(Request("d"), &queued).ok());
  pb::EvalJob cancelled;
  ASSERT_TRUE(main.Cancel(queued.id(), &cancelled).ok());
  EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED);
  pb::GetServerInfoRequest info_req;
  pb::ServerInfo info;
  ASSERT_TRUE(main.Call(&pb::DrafterEval::Stub::GetServerInfo, info_req, &info).ok());
  EXPECT_EQ(info.running_jobs(), 1);
  EXPECT_EQ(info.queued_jobs(), 8);

  // Unloading what queued jobs use is refused, naming them.
  client::EvalClient admin(server->address(), 60s);
  auto unload = admin.Unload(pb::RESOURCE_KIND_DATASET, "big");
  EXPECT_THAT(unload,
              testing::StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(longjob.id())));
  unload = admin.Unload(pb::RESOURCE_KIND_DRAFTER, "m");
  EXPECT_THAT(unload, testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("is used by queued or running jobs")));

  ASSERT_TRUE(main.Cancel(longjob.id(), &cancelled).ok());
  EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED) << cancelled.DebugString();
  EXPECT_GT(cancelled.progress().blocks_done(), 0);
  EXPECT_LT(cancelled.progress().blocks_done(), cancelled.progress().blocks_total());
  EXPECT_FALSE(cancelled.has_result());
  pb::EvalJob again;
  grpc::Status late = main.Cancel(longjob.id(), &again);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(late.error_message(), HasSubstr("already finished (CANCELLED)"));

  // Every curve job succeeds with RunEval's numbers.
  for (int step = 0; step < 8; ++step) {
    pb::EvalJob done = main.WaitDone(ids[step]);
    ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
    EXPECT_EQ(done.request().step(), step * 1000);
    EXPECT_TRUE(done.has_start_time() && done.has_end_time());
    EXPECT_FALSE(done.result().dataset_fingerprint().empty());
    EXPECT_FALSE(done.result().drafter_fingerprint().empty());
    if (step % 3 == 0) ExpectSameNumbers(done.result(), main.RunEval(done.request()));
  }
  watcher.join();
  EXPECT_TRUE(watch_status.ok()) << watch_status.error_message();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.front().state(), pb::JOB_STATE_QUEUED);
  EXPECT_EQ(seen.back().state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(seen.back().has_result());
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].progress().blocks_done(), seen[i - 1].progress().blocks_done());
  }

  // The training curve: by run, step ascending, across pages.
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

  // Compare: the same data in another layout is another dataset.
  pb::EvalJob split;
  ASSERT_TRUE(main.Submit(Request("split"), &split).ok());
  pb::EvalJob full;
  ASSERT_TRUE(main.Submit(Request("d"), &full).ok());
  ASSERT_EQ(main.WaitDone(split.id()).state(), pb::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(main.WaitDone(full.id()).state(), pb::JOB_STATE_SUCCEEDED);
  pb::CompareEvalsRequest cmp;
  cmp.add_ids(full.id());
  cmp.add_ids(split.id());
  cmp.add_ids(ids[0]);
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
              HasSubstr("recipe of " + ids[0] + " differs from " + full.id() +
                        ": samples: all vs at most 1"));
  cmp.add_ids(longjob.id());
  cs = main.Call(&pb::DrafterEval::Stub::CompareEvals, cmp, &compared);
  EXPECT_EQ(cs.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(cs.error_message(), HasSubstr("is CANCELLED; only SUCCEEDED jobs can be compared"));
  cmp.set_ids(3, "ev-00000000-000000-0000");
  cs = main.Call(&pb::DrafterEval::Stub::CompareEvals, cmp, &compared);
  EXPECT_EQ(cs.error_code(), grpc::StatusCode::NOT_FOUND);

  // The training-loop call: a checkpoint path, labels, unload_after.
  pb::EvalRequest ckpt = Request("d");
  ckpt.clear_drafter();
  ckpt.set_checkpoint_path(data_ + "/drafter-pt");
  ckpt.set_run("loop");
  ckpt.set_step(4000);
  ckpt.set_unload_after(true);
  pb::EvalJob loop;
  ASSERT_TRUE(main.Submit(ckpt, &loop).ok());
  pb::EvalJob loop_done = main.WaitDone(loop.id());
  ASSERT_EQ(loop_done.state(), pb::JOB_STATE_SUCCEEDED) << loop_done.error_message();
  ExpectSameNumbers(loop_done.result(), main.Get(full.id()).result());  // same weights
  pb::EvalJob re;
  ASSERT_TRUE(main.Resubmit(loop.id(), &re).ok());
  EXPECT_EQ(re.resubmitted_from(), loop.id());
  EXPECT_EQ(main.WaitDone(re.id()).state(), pb::JOB_STATE_SUCCEEDED);

  // Bad submits are refused before queueing.
  pb::EvalJob bad;
  grpc::Status s = main.Submit(Request("nope"), &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("no resident dataset named 'nope'"));
  pb::EvalRequest both = Request("d");
  both.set_checkpoint_path(data_ + "/drafter-pt");
  s = main.Submit(both, &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A checkpoint that does not load fails the job with the load's error.
  pb::EvalRequest missing = Request("d");
  missing.clear_drafter();
  missing.set_checkpoint_path(data_ + "/no-such-drafter");
  pb::EvalJob failed;
  ASSERT_TRUE(main.Submit(missing, &failed).ok());
  pb::EvalJob failed_done = main.WaitDone(failed.id());
  EXPECT_EQ(failed_done.state(), pb::JOB_STATE_FAILED);
  EXPECT_EQ(failed_done.error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));

  // Nothing in use any more: unloading works.
  EXPECT_OK(admin.Unload(pb::RESOURCE_KIND_DATASET, "big").status());
}

TEST_F(JobsE2eTest, ResultsSurviveKill9AndInterruptedJobsResubmitToTheSameNumbers) {
  auto server = Start("state-durable");
  ASSERT_NE(server, nullptr);
  Load(server->address());
  pb::EvalJob done_job;
  pb::EvalResult done_result;
  pb::EvalJob killed;
  pb::EvalJob behind;
  {
    Client c(server->address());
    pb::EvalRequest r = Request("d");
    r.set_run("durable");
    ASSERT_TRUE(c.Submit(r, &done_job).ok());
    pb::EvalJob d = c.WaitDone(done_job.id());
    ASSERT_EQ(d.state(), pb::JOB_STATE_SUCCEEDED);
    done_result = d.result();
    ASSERT_TRUE(c.Submit(Request("big", 300), &killed).ok());
    ASSERT_TRUE(c.Submit(Request("d"), &behind).ok());
    c.WaitRunning(killed.id());
  }
  server->Stop(SIGKILL);

  server = Start("state-durable");
  ASSERT_NE(server, nullptr);
  Client c(server->address());
  pb::EvalJob d = c.Get(done_job.id());
  ASSERT_EQ(d.state(), pb::JOB_STATE_SUCCEEDED);
  google::protobuf::util::MessageDifferencer diff;
  EXPECT_TRUE(diff.Compare(d.result(), done_result));  // every field, timings included
  for (const std::string& id : {killed.id(), behind.id()}) {
    pb::EvalJob k = c.Get(id);
    EXPECT_EQ(k.state(), pb::JOB_STATE_INTERRUPTED) << id;
    EXPECT_TRUE(k.interrupted_by_restart()) << id;
    EXPECT_FALSE(k.has_result());
  }
  Load(server->address());
  pb::EvalJob again;
  ASSERT_TRUE(c.Resubmit(killed.id(), &again).ok());
  EXPECT_EQ(again.resubmitted_from(), killed.id());
  EXPECT_GT(again.id(), killed.id());
  pb::EvalJob again_done = c.WaitDone(again.id());
  ASSERT_EQ(again_done.state(), pb::JOB_STATE_SUCCEEDED);
  ExpectSameNumbers(again_done.result(), c.RunEval(killed.request()));

  // kill -9 at random moments while short jobs come and go: the store always
  // opens, nothing is left QUEUED/RUNNING, every SUCCEEDED job is complete.
  std::mt19937 rng(12345);
  for (int round = 0; round < 3; ++round) {
    {
      Client k(server->address());
      for (int i = 0; i < 4; ++i) {
        pb::EvalJob j;
        ASSERT_TRUE(k.Submit(Request(i % 2 ? "big" : "d", 1 + i * 37), &j).ok());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
    }
    server->Stop(round == 2 ? SIGTERM : SIGKILL);
    server = Start("state-durable");
    ASSERT_NE(server, nullptr) << "round " << round;
    Client k(server->address());
    pb::ListEvalsRequest all;
    all.set_page_size(1000);
    pb::ListEvalsResponse listed = k.List(all);
    EXPECT_GE(listed.jobs_size(), 6 + 4 * round);
    for (const pb::EvalJob& j : listed.jobs()) {
      EXPECT_NE(j.state(), pb::JOB_STATE_QUEUED) << j.id();
      EXPECT_NE(j.state(), pb::JOB_STATE_RUNNING) << j.id();
      if (j.state() == pb::JOB_STATE_SUCCEEDED) {
        EXPECT_GT(j.result().positions_size(), 0) << j.id();
        EXPECT_GT(j.result().per_sample_size(), 0) << j.id();
        EXPECT_GT(j.result().accepted_histogram_size(), 0) << j.id();
      } else {
        EXPECT_FALSE(j.has_result()) << j.id();
      }
    }
    Load(server->address(), /*big=*/true);
  }
  EXPECT_THAT(server->log(), HasSubstr("results store"));
}

TEST_F(JobsE2eTest, AFullQueueIsResourceExhausted) {
  auto server = Start("state-full", {"--max-queued", "1"});
  ASSERT_NE(server, nullptr);
  Load(server->address());
  Client c(server->address());
  pb::EvalJob a, b, d;
  ASSERT_TRUE(c.Submit(Request("big"), &a).ok());
  c.WaitRunning(a.id());
  ASSERT_TRUE(c.Submit(Request("d"), &b).ok());
  grpc::Status s = c.Submit(Request("d"), &d);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("queue is full (1 queued, limit 1)"));
  // SIGTERM: the running job stops at a chunk boundary, stored INTERRUPTED.
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  EXPECT_THAT(server->log(), HasSubstr("job queue stopped"));
  server = Start("state-full");
  ASSERT_NE(server, nullptr);
  Client after(server->address());
  EXPECT_EQ(after.Get(a.id()).state(), pb::JOB_STATE_INTERRUPTED);
  EXPECT_EQ(after.Get(b.id()).state(), pb::JOB_STATE_INTERRUPTED);
}

}  // namespace
}  // namespace dflash
