// Issue 30, item 1 in a fleet: two real dflash-evald servers (one thread
// each) on one real PostgreSQL. A 64-sample evaluation naming its dataset
// by path, split into 8 shard jobs, gives the single server's JSON; kill -9
// of a server in a shard: the shard runs again on the other, each shard
// counted once, the result the same; cancel mid-job leaves no shard
// running; a shard whose server read another copy of the dataset fails the
// job naming both fingerprints. Timings (kill -9 to rerun, merge overhead)
// are printed as "[measure]" lines.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "fleet/fleet_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/result_compare.h"
#include "integration/tiny_fixture.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::CommandResult;
using ::dflash::testing::ExpectSameResult;
using ::dflash::testing::ExpectShardsCover;
using ::dflash::testing::JobClient;
using ::dflash::testing::Seconds;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kShards = 8;
constexpr int kLongSamples = 2400;  // the tiny dataset 400 times over: about a second a shard

json ToJson(const google::protobuf::Message& m) {
  std::string text;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &text).ok());
  return json::parse(text);
}

int64_t Micros(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000 + t.nanos() / 1000;
}

std::string ShardId(const std::string& parent, int k) {
  return absl::StrCat(parent, ".s", k);
}

class FleetShardsE2eTest : public testing::FleetTestBase {
 protected:
  static void SetUpTestSuite() {
    SetUpFleet();
    ASSERT_FALSE(::testing::Test::HasFailure());
    testing::MakeLongDataset(data_, data_ + "/d64", 64);
    testing::MakeLongDataset(data_, data_ + "/long", kLongSamples);
  }
  static void TearDownTestSuite() { TearDownFleet(); }

  // A fleet server with one intra-op thread and nothing resident: jobs load
  // what they name by path.
  std::unique_ptr<ServerProcess> StartServer(const std::string& url, const std::string& name) {
    return StartFleetServer(url, name, "3", {"--threads", "1"});
  }

  // The job: drafter, target and dataset by path, every anchor.
  pb::EvalRequest Request(const std::string& dataset, int shards) {
    pb::EvalRequest r;
    r.set_checkpoint_path(data_ + "/drafter");
    r.set_dataset_path(data_ + "/" + dataset);
    r.set_target_path(data_ + "/target");
    r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
    r.set_seed(3);
    r.set_shards(shards);
    return r;
  }

  // The single server's result (SQLite, one thread, in one piece) as JSON.
  json SingleServerResult(const std::string& dataset) {
    auto single = ServerProcess::Start(dir_->Join("state-single-" + dataset),
                                       {"--data-root", data_, "--threads", "1"});
    EXPECT_TRUE(single.ok()) << single.status();
    if (!single.ok()) return {};
    for (const std::string what : {"target", "dataset"}) {
      const std::string path = data_ + "/" + (what == "target" ? "target" : dataset);
      CommandResult r = testing::RunCli((*single)->address(), {"load-" + what, path});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    pb::EvalRequest r = Request(dataset, 1);
    r.clear_dataset_path();
    r.clear_target_path();
    r.set_dataset(dataset);
    JobClient c((*single)->address());
    const Clock::time_point t0 = Clock::now();
    pb::EvalJob done = c.WaitDone(c.Submit(r).id(), 600);
    EXPECT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
    std::cout << "[measure] " << dataset
              << " on one server, one thread: " << Seconds(Clock::now() - t0) << " s\n";
    return ToJson(done.result());
  }

  // Every shard job of `parent` as it stands.
  std::vector<pb::EvalJob> Shards(JobClient& c, const std::string& parent) {
    std::vector<pb::EvalJob> out;
    for (int k = 0; k < kShards; ++k) out.push_back(c.Get(ShardId(parent, k)));
    return out;
  }
};

TEST_F(FleetShardsE2eTest, EightShardsOnTwoServersGiveTheSingleServerResult) {
  const json want = SingleServerResult("d64");
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(testing::JsonInt(want["samples"]), 64);
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  JobClient ca(a->address());
  const Clock::time_point t0 = Clock::now();
  pb::EvalJob job = ca.Submit(Request("d64", kShards));
  pb::EvalJob done = ca.WaitDone(job.id(), 600);
  std::cout << "[measure] d64 in 8 shards on two servers: " << Seconds(Clock::now() - t0)
            << " s wall\n";
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  const json got = ToJson(done.result());
  ExpectSameResult(want, got);
  ExpectShardsCover(got, 64, kShards);
  // Progress counted every shard's blocks.
  EXPECT_EQ(done.progress().blocks_done(), testing::JsonInt(got["blocks"]));
  EXPECT_EQ(done.progress().blocks_total(), testing::JsonInt(got["blocks"]));
  EXPECT_EQ(done.progress().samples_done(), 64);
  // Each shard a job of its own, run once, on the server its placement names.
  std::map<std::string, int> per_server;
  std::vector<pb::EvalJob> shards = Shards(ca, job.id());
  for (int k = 0; k < kShards; ++k) {
    const pb::EvalJob& s = shards[k];
    ASSERT_EQ(s.state(), pb::JOB_STATE_SUCCEEDED) << s.DebugString();
    ASSERT_EQ(s.attempts_size(), 1) << s.DebugString();
    EXPECT_EQ(s.attempts(0).outcome(), "SUCCEEDED");
    EXPECT_EQ(got["shards"][k]["server"], s.server());
    EXPECT_EQ(testing::JsonInt(got["shards"][k]["blocks"]), s.result().blocks());
    ++per_server[s.server()];
  }
  for (const auto& [server, n] : per_server) {
    std::cout << "[measure] " << server << " ran " << n << " shard(s)\n";
  }
  // Merge overhead: the parent's wall time past its last shard's end.
  int64_t last_end = 0;
  for (const pb::EvalJob& s : shards) last_end = std::max(last_end, Micros(s.end_time()));
  std::cout << "[measure] parent ended " << (Micros(done.end_time()) - last_end) / 1e3
            << " ms after its last shard (poll, fetch, merge, finish)\n";
}

TEST_F(FleetShardsE2eTest, Kill9OfAServerInAShardRerunsTheShardOnTheOther) {
  const json want = SingleServerResult("long");
  ASSERT_FALSE(want.empty());
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::map<std::string, ServerProcess*> by_name = {{"a", a.get()}, {"b", b.get()}};
  JobClient ca(a->address());
  pb::EvalJob job = ca.Submit(Request("long", kShards));
  const std::string parent_server = ca.WaitRunning(job.id()).server();
  ASSERT_TRUE(parent_server == "a" || parent_server == "b");
  const std::string victim = parent_server == "a" ? "b" : "a";
  JobClient cp(by_name[parent_server]->address());
  // A shard the other server is scoring.
  std::string killed_shard;
  for (int i = 0; i < 6000 && killed_shard.empty(); ++i) {
    for (const pb::EvalJob& s : Shards(cp, job.id())) {
      if (s.state() == pb::JOB_STATE_RUNNING && s.server() == victim &&
          s.progress().blocks_done() > 0) {
        killed_shard = s.id();
      }
    }
    if (killed_shard.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(killed_shard.empty()) << "no shard ran on " << victim;
  const Clock::time_point killed = Clock::now();
  by_name[victim]->Stop(SIGKILL);

  double rerun_seconds = -1;
  for (int i = 0; i < 6000 && rerun_seconds < 0; ++i) {
    if (cp.Get(killed_shard).attempts_size() == 2) rerun_seconds = Seconds(Clock::now() - killed);
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(rerun_seconds, 0) << "the shard never ran again";
  std::cout << "[measure] kill -9 to the shard's rerun: " << rerun_seconds
            << " s (lease 3 s, heartbeat 0.5 s)\n";
  pb::EvalJob done = cp.WaitDone(job.id(), 600);
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  ASSERT_EQ(done.attempts_size(), 1);  // the parent itself ran once
  const json got = ToJson(done.result());
  ExpectSameResult(want, got);
  ExpectShardsCover(got, kLongSamples, kShards);
  EXPECT_EQ(done.progress().blocks_done(), testing::JsonInt(got["blocks"]));

  pb::EvalJob rerun = cp.Get(killed_shard);
  ASSERT_EQ(rerun.attempts_size(), 2) << rerun.DebugString();
  EXPECT_EQ(rerun.attempts(0).server(), victim);
  EXPECT_EQ(rerun.attempts(0).outcome(), "lease expired: the server stopped renewing it");
  EXPECT_EQ(rerun.attempts(1).server(), parent_server);
  EXPECT_EQ(rerun.attempts(1).outcome(), "SUCCEEDED");
  // Each shard counted once: one SUCCEEDED attempt each, its blocks once.
  int64_t blocks = 0;
  for (const pb::EvalJob& s : Shards(cp, job.id())) {
    ASSERT_EQ(s.state(), pb::JOB_STATE_SUCCEEDED) << s.DebugString();
    int succeeded = 0;
    for (const pb::EvalAttempt& at : s.attempts()) succeeded += at.outcome() == "SUCCEEDED";
    EXPECT_EQ(succeeded, 1) << s.DebugString();
    blocks += s.result().blocks();
    const int k = std::stoi(s.id().substr(s.id().rfind(".s") + 2));
    EXPECT_EQ(got["shards"][k]["server"], s.server());
  }
  EXPECT_EQ(blocks, testing::JsonInt(got["blocks"]));
}

TEST_F(FleetShardsE2eTest, CancelMidJobLeavesNoShardRunning) {
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  JobClient ca(a->address()), cb(b->address());
  pb::EvalJob job = ca.Submit(Request("long", kShards));
  const std::string parent_server = ca.WaitRunning(job.id()).server();
  // Both servers scoring a shard.
  bool both = false;
  for (int i = 0; i < 6000 && !both; ++i) {
    std::set<std::string> running;
    for (const pb::EvalJob& s : Shards(ca, job.id())) {
      if (s.state() == pb::JOB_STATE_RUNNING && s.progress().blocks_done() > 0) {
        running.insert(s.server());
      }
    }
    both = running.size() == 2;
    if (!both) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(both) << "the shards never ran on both servers";
  // Through the server that is not running the parent.
  JobClient& other = parent_server == "a" ? cb : ca;
  pb::EvalJob cancelled;
  grpc::Status s = other.Cancel(job.id(), &cancelled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  pb::EvalJob done = other.WaitDone(job.id(), 120);
  ASSERT_EQ(done.state(), pb::JOB_STATE_CANCELLED) << done.DebugString();
  EXPECT_EQ(done.error_message(), "cancelled while running");
  // No shard left QUEUED or RUNNING, and none still scoring.
  std::vector<pb::EvalJob> shards = Shards(ca, job.id());
  int stopped = 0;
  for (const pb::EvalJob& sh : shards) {
    EXPECT_TRUE(sh.state() == pb::JOB_STATE_CANCELLED || sh.state() == pb::JOB_STATE_SUCCEEDED)
        << sh.DebugString();
    stopped += sh.state() == pb::JOB_STATE_CANCELLED;
  }
  EXPECT_GE(stopped, 2);  // at least the two that were running
  std::this_thread::sleep_for(1500ms);
  std::vector<pb::EvalJob> later = Shards(ca, job.id());
  for (int k = 0; k < kShards; ++k) {
    EXPECT_EQ(later[k].state(), shards[k].state());
    EXPECT_EQ(later[k].progress().blocks_done(), shards[k].progress().blocks_done());
  }
  for (const auto* server : {a.get(), b.get()}) {
    const json info = testing::RunCliJson(server->address(), {"info"});
    EXPECT_EQ(info.value("runningJobs", 0), 0) << info.dump();
  }
}

TEST_F(FleetShardsE2eTest, AShardOnAnotherCopyOfTheDatasetFailsTheJobNamingBothFingerprints) {
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // b loads the copy at `path`; then the folder there is replaced by
  // another copy (the same samples in another order), which a loads.
  const std::string path = data_ + "/copy";
  testing::MakeLongDataset(data_, path, kLongSamples);
  std::map<std::string, std::string> fingerprint;
  json loaded = testing::RunCliJson(b->address(), {"load-dataset", path});
  fingerprint["b"] = loaded["resource"]["fingerprint"].get<std::string>();
  fs::rename(path, data_ + "/copy-b");
  fs::create_directories(path + "/rows");
  fs::copy_file(data_ + "/dataset/dataset.json", path + "/dataset.json");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(data_ + "/copy-b/rows")) {
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (size_t k = 0; k < files.size(); ++k) {
    fs::create_hard_link(files[(k + 1) % files.size()],
                         absl::StrCat(path, "/rows/", fs::path(files[k]).filename().string()));
  }
  loaded = testing::RunCliJson(a->address(), {"load-dataset", path});
  fingerprint["a"] = loaded["resource"]["fingerprint"].get<std::string>();
  ASSERT_NE(fingerprint["a"], fingerprint["b"]);

  JobClient ca(a->address());
  pb::EvalJob job = ca.Submit(Request("copy", kShards));
  pb::EvalJob done = ca.WaitDone(job.id(), 600);
  ASSERT_EQ(done.state(), pb::JOB_STATE_FAILED) << done.DebugString();
  EXPECT_EQ(done.error_code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  const std::string parent = done.server(), other = parent == "a" ? "b" : "a";
  EXPECT_THAT(done.error_message(),
              HasSubstr(absl::StrCat(") ran on server ", other, " with dataset fingerprint ",
                                     fingerprint[other], "; server ", parent, "'s copy has ",
                                     fingerprint[parent])));
  EXPECT_THAT(done.error_message(), HasSubstr(fs::weakly_canonical(path).string()));
  // The other shards were stopped: none QUEUED or RUNNING once they end.
  for (int i = 0; i < 300; ++i) {
    bool open = false;
    for (const pb::EvalJob& s : Shards(ca, job.id())) {
      open = open || s.state() == pb::JOB_STATE_QUEUED || s.state() == pb::JOB_STATE_RUNNING;
    }
    if (!open) break;
    std::this_thread::sleep_for(50ms);
  }
  for (const pb::EvalJob& s : Shards(ca, job.id())) {
    EXPECT_NE(s.state(), pb::JOB_STATE_QUEUED) << s.id();
    EXPECT_NE(s.state(), pb::JOB_STATE_RUNNING) << s.id();
  }
}

}  // namespace
}  // namespace dflash
