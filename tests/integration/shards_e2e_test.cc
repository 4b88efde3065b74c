// Issue 30, end to end with the real binaries on one server with two CPU
// device slots (--device cpu,cpu): a 64-sample evaluation in 8 shards gives
// the one-pass JSON; a cancelled sharded job leaves nothing running; a
// dataset three times its streaming budget gives the resident result with
// the server's peak RSS (from /proc) within the budget plus 10%; a streamed
// sample file that disappears fails the job with its path and the server
// keeps serving.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/result_compare.h"
#include "integration/tiny_fixture.h"
#include "test_util/torch_save_writer.h"

namespace dflash {
namespace {

using ::dflash::testing::CommandResult;
using ::dflash::testing::ExpectSameResult;
using ::dflash::testing::ExpectShardsCover;
using ::dflash::testing::MakeLongDataset;
using ::dflash::testing::TinyServerTest;
using ::dflash::testing::TorchSaveWriter;
using ::testing::HasSubstr;
using json = nlohmann::json;
namespace fs = std::filesystem;

int64_t Int(const json& j) {
  return testing::JsonInt(j);
}

// "VmRSS" or "VmHWM" of a process, in bytes.
int64_t ProcStatus(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

// A dataset of `samples` long sequences (L tokens, the tiny model's five
// layers of width 32, fp32: about 0.64 KB a token): 8 distinct files,
// hard-linked to `samples`.
void WriteLongSamples(const std::string& dir, int samples, int64_t L) {
  fs::create_directories(dir + "/rows");
  std::ofstream(dir + "/dataset.json")
      << R"({"name": "long", "hidden_size": 32, "features": {"hidden_states": [1, 3, 5, 7, 9]}})";
  std::mt19937 rng(7);
  for (int k = 0; k < samples; ++k) {
    const std::string path = dir + "/rows/data_" + std::to_string(k) + ".ckpt";
    if (k >= 8) {
      fs::create_hard_link(dir + "/rows/data_" + std::to_string(k % 8) + ".ckpt", path);
      continue;
    }
    std::string ids(L * 8, '\0'), mask(L, '\0'), hidden(L * 160 * 4, '\0');
    for (int64_t i = 0; i < L; ++i) {
      const int64_t t = static_cast<int64_t>(rng() % 128);
      std::memcpy(&ids[i * 8], &t, 8);
      mask[i] = i >= 16 ? 1 : 0;
    }
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < L * 160; ++i) {
      const float f = normal(rng);
      std::memcpy(&hidden[i * 4], &f, 4);
    }
    TorchSaveWriter()
        .Add("input_ids", "LongStorage", {L}, ids, 8)
        .Add("loss_mask", "ByteStorage", {L}, mask, 1)
        .Add("hidden_states", "FloatStorage", {L, 160}, hidden, 4)
        .WriteTo(path);
  }
}

class ShardsE2eTest : public TinyServerTest {
 protected:
  static void SetUpTestSuite() { SetUpTinyServer({"--device", "cpu,cpu"}); }
};

TEST_F(ShardsE2eTest, EightShardsOnTwoCpuSlotsGiveTheOnePassResult) {
  MakeLongDataset(data_, data_ + "/d64", 64);
  ASSERT_EQ(Cli({"load-dataset", data_ + "/d64", "--name", "d64"}).exit_code, 0);
  for (const std::string mode : {"anchor", "replay"}) {
    SCOPED_TRACE(mode);
    const std::vector<std::string> eval = {"eval", "--drafter", "m",   "--dataset", "d64", "--mode",
                                           mode,   "--anchors", "all", "--seed",    "3"};
    std::vector<std::string> one = eval, eight = eval;
    one.insert(one.end(), {"--shards", "1"});
    eight.insert(eight.end(), {"--shards", "8"});
    const json single = CliJson(one);
    const json sharded = CliJson(eight);
    ASSERT_FALSE(single.empty());
    ASSERT_FALSE(sharded.empty());
    EXPECT_EQ(Int(single["samples"]), 64);
    ExpectSameResult(single, sharded);
    ExpectShardsCover(single, 64, 1);
    ExpectShardsCover(sharded, 64, 8);
    std::set<std::string> devices;
    for (const json& s : sharded["shards"]) {
      devices.insert(s["device"].get<std::string>());
      EXPECT_THAT(s["server"].get<std::string>(), HasSubstr(":"));  // host:pid
    }
    EXPECT_EQ(devices, (std::set<std::string>{"cpu#0", "cpu#1"}));
  }
  // Placement is visible: info names the slots, status lists each shard.
  EXPECT_THAT(Cli({"info"}).out, HasSubstr("cpu#0, cpu#1 (an evaluation's shards run on each)"));
  CommandResult detached =
      Cli({"eval", "--detach", "--drafter", "m", "--dataset", "d64", "--shards", "8"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  const std::string id = detached.out.substr(0, detached.out.find_first_of(" \n"));
  ASSERT_EQ(Cli({"results", id, "--wait", "--progress", "none"}).exit_code, 0);
  CommandResult status = Cli({"status", id});
  EXPECT_THAT(status.out, HasSubstr("  shards       samples [0, "));
  EXPECT_THAT(status.out, HasSubstr("cpu#1"));
  // The detail view lists them.
  CommandResult detail =
      Cli({"eval", "--drafter", "m", "--dataset", "d64", "--shards", "8", "--detail"});
  ASSERT_EQ(detail.exit_code, 0) << detail.err;
  EXPECT_THAT(detail.out, HasSubstr("shards: 8\n  samples [0, "));
}

TEST_F(ShardsE2eTest, CancelMidJobLeavesNoShardRunning) {
  MakeLongDataset(data_, data_ + "/long-cancel");
  ASSERT_EQ(Cli({"load-dataset", data_ + "/long-cancel", "--name", "lc"}).exit_code, 0);
  CommandResult detached = Cli({"eval", "--detach", "--drafter", "m", "--dataset", "lc",
                                "--anchors", "all", "--shards", "8"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  const std::string id = detached.out.substr(0, detached.out.find_first_of(" \n"));
  json job;
  for (int i = 0; i < 1500; ++i) {  // until it has scored something
    job = CliJson({"status", id});
    if (job["state"] == "JOB_STATE_RUNNING" && job["progress"].contains("blocksDone")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(job["state"], "JOB_STATE_RUNNING") << job.dump();
  ASSERT_EQ(Cli({"cancel", id}).exit_code, 0);
  for (int i = 0; i < 1500 && job["state"] != "JOB_STATE_CANCELLED"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    job = CliJson({"status", id});
  }
  ASSERT_EQ(job["state"], "JOB_STATE_CANCELLED") << job.dump();
  const int64_t done = Int(job["progress"]["blocksDone"]);
  EXPECT_LT(done, Int(job["progress"]["blocksTotal"]));
  // Nothing still scoring: progress stands, the server holds no running job,
  // and the next evaluation runs at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Int(CliJson({"status", id})["progress"]["blocksDone"]), done);
  const json info = CliJson({"info"});
  EXPECT_EQ(info["runningJobs"], 0) << info.dump();
  EXPECT_EQ(Int(CliJson({"eval", "--drafter", "m", "--dataset", "d", "--shards", "2"})["samples"]),
            6);
}

TEST_F(ShardsE2eTest, StreamedDatasetThreeTimesItsBudgetEqualsResidentWithinTheBudget) {
  const std::string dir = data_ + "/long-stream";
  WriteLongSamples(dir, 64, 2048);  // 64 x 1.3 MB resident
  const json resident = CliJson({"load-dataset", dir, "--name", "long-res"});
  ASSERT_FALSE(resident.empty());
  const int64_t bytes = Int(resident["resource"]["bytes"]);
  const int64_t budget = bytes / 3;
  const json streamed = CliJson({"load-dataset", dir, "--name", "long-str", "--stream",
                                 "--stream-budget", std::to_string(budget)});
  ASSERT_FALSE(streamed.empty());
  EXPECT_TRUE(streamed["resource"]["streamed"].get<bool>());
  EXPECT_EQ(Int(streamed["resource"]["streamBytes"]), bytes);
  EXPECT_EQ(Int(streamed["resource"]["bytes"]), 0);  // nothing resident
  EXPECT_EQ(streamed["resource"]["fingerprint"], resident["resource"]["fingerprint"]);
  CommandResult ls = Cli({"ls"});
  EXPECT_THAT(ls.out, HasSubstr("streamed from disk"));

  const std::vector<std::string> eval = {"eval",         "--drafter", "m",      "--mode", "anchor",
                                         "--max-blocks", "2",         "--seed", "1"};
  std::vector<std::string> on_res = eval, on_str = eval;
  on_res.insert(on_res.end(), {"--dataset", "long-res"});
  on_str.insert(on_str.end(), {"--dataset", "long-str"});
  const json want = CliJson(on_res);
  ASSERT_FALSE(want.empty());
  // The peak from here on: clear_refs 5 resets VmHWM to the current RSS.
  const pid_t pid = server_->pid();
  { std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5"; }
  const int64_t before = ProcStatus(pid, "VmRSS");
  const json got = CliJson(on_str);
  const int64_t peak = ProcStatus(pid, "VmHWM");
  ASSERT_FALSE(got.empty());
  ExpectSameResult(want, got);
  EXPECT_EQ(want["datasetFingerprint"], got["datasetFingerprint"]);
  int64_t read = 0;
  for (const json& s : got["shards"]) read += Int(s["bytesRead"]);
  EXPECT_EQ(read, bytes);
  EXPECT_GE(got["shards"].size(), 4u);  // chunks of at most budget / 2
  std::cout << "streamed: budget " << budget << " bytes, dataset " << bytes << " bytes, RSS "
            << before << " -> peak " << peak << " (+" << peak - before << ", "
            << static_cast<double>(peak - before) / budget << " x budget), " << got["shards"].size()
            << " chunks\n";
  ASSERT_GT(before, 0);
  EXPECT_LE(peak - before, budget + budget / 10);
}

TEST_F(ShardsE2eTest, AStreamedFileThatDisappearsFailsTheJobWithItsPath) {
  const std::string dir = data_ + "/stream-gone";
  MakeLongDataset(data_, dir, 12);
  ASSERT_EQ(Cli({"load-dataset", dir, "--name", "gone", "--stream"}).exit_code, 0);
  const std::string victim = dir + "/rows/data_7.ckpt";
  fs::remove(victim);
  CommandResult failed = Cli({"eval", "--drafter", "m", "--dataset", "gone"});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_THAT(failed.out + failed.err, HasSubstr("streamed dataset 'gone': sample file '" + victim +
                                                 "' is gone since the dataset was loaded"));
  EXPECT_EQ(Cli({"info"}).exit_code, 0);  // still serving
  EXPECT_EQ(Int(CliJson({"eval", "--drafter", "m", "--dataset", "d"})["samples"]), 6);
}

TEST_F(ShardsE2eTest, ShardsOutOfRangeIsAUsageError) {
  CommandResult bad = Cli({"eval", "--drafter", "m", "--dataset", "d", "--shards", "5000"});
  EXPECT_EQ(bad.exit_code, 64) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--shards: Value 5000 not in range 0 to 4096"));
}

}  // namespace
}  // namespace dflash
