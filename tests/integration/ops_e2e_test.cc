// Operations, end to end with the real binaries: a config file that preloads
// a tiny target, dataset and drafter (health turns SERVING after the loads,
// `dflash-eval ls` shows them), a preload that fails (exit 1, with the
// reason), the Prometheus endpoint scraped over a plain socket before and
// after an evaluation, and --log-format json lines that parse.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/http_get.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::HttpGet;
using ::dflash::testing::MakeLongDataset;
using ::dflash::testing::MetricSample;
using ::dflash::testing::ReadFileOrEmpty;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
namespace fs = std::filesystem;

class OpsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    data_ = dir_->Join("data");
    testing::MakeTinyFixture(data_);
    ASSERT_FALSE(::testing::Test::HasFailure());
  }
  static void TearDownTestSuite() { delete dir_; }

  std::string WriteConfig(const std::string& name, const std::string& text) {
    const std::string path = dir_->Join(name);
    std::ofstream(path) << text;
    return path;
  }
  static CommandResult Cli(const ServerProcess& server, std::vector<std::string> args) {
    return testing::RunCli(server.address(), std::move(args));
  }

  // The port file comes before the preload; health says when it is done.
  static void WaitServing(const ServerProcess& server) {
    CommandResult health;
    for (int i = 0; i < 100; ++i) {
      health = Cli(server, {"health"});
      if (health.exit_code == 0) break;
      EXPECT_THAT(health.err, HasSubstr("NOT_SERVING"));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_EQ(health.exit_code, 0) << health.err << server.log();
    EXPECT_THAT(health.out, HasSubstr("SERVING"));
  }

  // `dflash-eval ls` shows the preloaded target, dataset and drafter.
  static void ExpectPreloaded(const ServerProcess& server) {
    CommandResult ls = Cli(server, {"--json", "ls"});
    ASSERT_EQ(ls.exit_code, 0) << ls.err;
    const json resources = json::parse(ls.out);
    std::set<std::string> names;
    for (const auto& r : resources["resources"]) names.insert(r["name"].get<std::string>());
    EXPECT_EQ(names, (std::set<std::string>{"t", "d", "m"})) << ls.out;
  }

  // The metrics port is in the log (port 0 picked a free one).
  static void FindMetricsPort(const ServerProcess& server, int* metrics_port) {
    std::smatch m;
    const std::string log = server.log();
    ASSERT_TRUE(
        std::regex_search(log, m, std::regex(R"(metrics on http://127\.0\.0\.1:(\d+)/metrics)")))
        << log;
    *metrics_port = std::stoi(m[1]);
  }

  // Before any evaluation: the loads and resident objects, no RPC counted.
  static void ExpectMetricsBeforeEval(int metrics_port) {
    const std::string before = HttpGet(metrics_port, "/metrics");
    ASSERT_THAT(before, HasSubstr("HTTP/1.1 200 OK"));
    EXPECT_THAT(before, HasSubstr("text/plain; version=0.0.4"));
    EXPECT_EQ(MetricSample(before, "dflash_evald_ready"), 1);
    EXPECT_EQ(MetricSample(before, R"(dflash_evald_resident_objects{kind="drafter"})"), 1);
    EXPECT_GT(MetricSample(before, R"(dflash_evald_resident_bytes{kind="dataset"})"), 0);
    EXPECT_EQ(MetricSample(before, R"(dflash_evald_loads_total{code="OK",kind="target"})"), 1);
    EXPECT_EQ(MetricSample(before, R"(dflash_evald_load_duration_seconds_count{kind="drafter"})"),
              1);
    EXPECT_GT(MetricSample(before, R"(dflash_evald_device_memory_total_bytes{device="cpu"})"), 0);
    EXPECT_EQ(MetricSample(before, R"(dflash_evald_jobs{state="queued"})"), 0);
    EXPECT_EQ(
        MetricSample(before, R"(dflash_evald_rpc_requests_total{code="OK",method="RunEval"})"), -1);
    EXPECT_THAT(HttpGet(metrics_port, "/other"), HasSubstr("404"));
  }

  // A RunEval that succeeds and one that fails, counted by code.
  static void ExpectRunEvalCounted(const ServerProcess& server, int metrics_port) {
    CommandResult ev =
        Cli(server, {"eval", "--sync", "--drafter", "m", "--dataset", "d", "--target", "t"});
    ASSERT_EQ(ev.exit_code, 0) << ev.err;
    CommandResult bad = Cli(server, {"eval", "--sync", "--drafter", "nope", "--dataset", "d"});
    EXPECT_NE(bad.exit_code, 0);

    const std::string after = HttpGet(metrics_port, "/metrics");
    EXPECT_EQ(MetricSample(after, R"(dflash_evald_rpc_requests_total{code="OK",method="RunEval"})"),
              1)
        << after;
    EXPECT_EQ(MetricSample(after,
                           R"(dflash_evald_rpc_requests_total{code="NOT_FOUND",method="RunEval"})"),
              1);
    EXPECT_EQ(MetricSample(
                  after, R"(dflash_evald_rpc_duration_seconds_count{code="OK",method="RunEval"})"),
              1);
    EXPECT_EQ(MetricSample(after, R"(dflash_evald_evals_total{code="OK"})"), 1);
    EXPECT_GT(MetricSample(after, "dflash_evald_eval_blocks_total"), 0);
    EXPECT_GT(MetricSample(after, "dflash_evald_eval_tokens_total"), 0);
    EXPECT_GT(MetricSample(after, R"(dflash_evald_last_eval_throughput{unit="tokens_per_second"})"),
              0);
    EXPECT_EQ(MetricSample(after, "dflash_evald_eval_duration_seconds_count"), 1);
  }

  // An evaluation run as a job is counted by the same core hooks.
  static void ExpectJobCounted(const ServerProcess& server, int metrics_port) {
    CommandResult job = Cli(server, {"eval", "--drafter", "m", "--dataset", "d", "--target", "t"});
    ASSERT_EQ(job.exit_code, 0) << job.err;
    const std::string after_job = HttpGet(metrics_port, "/metrics");
    EXPECT_EQ(MetricSample(after_job,
                           R"(dflash_evald_rpc_requests_total{code="OK",method="SubmitEval"})"),
              1);
    EXPECT_EQ(MetricSample(after_job, R"(dflash_evald_evals_total{code="OK"})"), 2) << after_job;
    EXPECT_EQ(MetricSample(after_job, R"(dflash_evald_jobs_finished_total{state="succeeded"})"), 1);
    EXPECT_EQ(MetricSample(after_job, R"(dflash_evald_jobs{state="running"})"), 0);
  }

  // Scraped during a job: a long one (the tiny samples 400 times over,
  // hard-linked) shows as running, then cancelled.
  static void ExpectRunningJobScraped(const ServerProcess& server, int metrics_port) {
    const std::string big = data_ + "/big-ops";  // inside the data root
    MakeLongDataset(data_, big);
    ASSERT_EQ(Cli(server, {"load-dataset", big, "--name", "big"}).exit_code, 0);
    CommandResult detached = Cli(server, {"eval", "--detach", "--drafter", "m", "--dataset", "big",
                                          "--target", "t", "--anchors", "all"});
    ASSERT_EQ(detached.exit_code, 0) << detached.err;
    const std::string id = detached.out.substr(0, detached.out.find_first_of(" \n"));
    double running = 0;
    for (int i = 0; i < 200 && running != 1; ++i) {
      running =
          MetricSample(HttpGet(metrics_port, "/metrics"), R"(dflash_evald_jobs{state="running"})");
      if (running != 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(running, 1);
    CommandResult cancel = Cli(server, {"cancel", id});
    EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
    const std::string after_cancel = HttpGet(metrics_port, "/metrics");
    EXPECT_EQ(MetricSample(after_cancel, R"(dflash_evald_jobs{state="running"})"), 0)
        << after_cancel;
    EXPECT_EQ(MetricSample(after_cancel, R"(dflash_evald_jobs_finished_total{state="cancelled"})"),
              1);
  }

  // Every line the server logged on stdout (`log_path`) is one JSON object;
  // the RunEval call's line carries its structured fields.
  static void ExpectJsonLogLines(const std::string& log_path) {
    std::istringstream lines(ReadFileOrEmpty(log_path));
    std::string line;
    int parsed = 0, rpc_lines = 0;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      json j;
      ASSERT_NO_THROW(j = json::parse(line)) << line;
      ASSERT_TRUE(j.is_object()) << line;
      EXPECT_TRUE(j["time"].is_string() && j["level"].is_string() && j["message"].is_string())
          << line;
      ++parsed;
      if (j.value("method", "") == "RunEval" && j.value("code", "") == "OK") {
        ++rpc_lines;
        EXPECT_EQ(j["level"], "info");
        EXPECT_THAT(j["peer"].get<std::string>(), HasSubstr("127.0.0.1"));
        EXPECT_FALSE(j["request_id"].get<std::string>().empty());
        EXPECT_TRUE(j["duration_ms"].is_number());
      }
    }
    EXPECT_GT(parsed, 5);
    EXPECT_EQ(rpc_lines, 1);
  }

  static testing::TempDir* dir_;
  static std::string data_;
};

testing::TempDir* OpsE2eTest::dir_ = nullptr;
std::string OpsE2eTest::data_;

TEST_F(OpsE2eTest, PreloadThenServeMetricsAndJsonLogs) {
  const std::string config = WriteConfig("good.yaml", R"(log_format: json
metrics_listen: 127.0.0.1:0
workers: 2
preload:
  targets:
    - {name: t, path: )" + data_ + R"(/target}
  datasets:
    - {name: d, path: )" + data_ + R"(/dataset}
  drafters:
    - {name: m, path: )" + data_ + R"(/drafter}
)");
  const std::string state = dir_->Join("state-good");
  ASSERT_OK_AND_ASSIGN(auto server,
                       ServerProcess::Start(state, {"--config", config, "--data-root", data_}));
  ASSERT_NO_FATAL_FAILURE(WaitServing(*server));
  ASSERT_NO_FATAL_FAILURE(ExpectPreloaded(*server));
  int metrics_port = 0;
  ASSERT_NO_FATAL_FAILURE(FindMetricsPort(*server, &metrics_port));
  ASSERT_NO_FATAL_FAILURE(ExpectMetricsBeforeEval(metrics_port));
  ASSERT_NO_FATAL_FAILURE(ExpectRunEvalCounted(*server, metrics_port));
  ASSERT_NO_FATAL_FAILURE(ExpectJobCounted(*server, metrics_port));
  ASSERT_NO_FATAL_FAILURE(ExpectRunningJobScraped(*server, metrics_port));
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  ExpectJsonLogLines(state + "/server.log");
}

TEST_F(OpsE2eTest, FailedPreloadExitsWithTheReason) {
  const std::string config = WriteConfig("bad.yaml", R"(preload:
  targets:
    - {name: t, path: )" + data_ + R"(/target}
  drafters:
    - {name: gone, path: )" + data_ + R"(/no-such-drafter}
)");
  CommandResult r =
      RunCommand({BinaryFromEnv("DFLASH_EVALD"), "--listen", "127.0.0.1:0", "--state-dir",
                  dir_->Join("state-bad"), "--data-root", data_, "--config", config},
                 {}, 120);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out + r.err,
              HasSubstr("preload of drafter 'gone' from '" + data_ + "/no-such-drafter' failed: "));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("serving dflash.eval.v1")));
}

TEST_F(OpsE2eTest, UnknownConfigKeyStopsTheServer) {
  const std::string config = WriteConfig("typo.yaml", "listen: 127.0.0.1:0\nworkrs: 2\n");
  CommandResult r = RunCommand(
      {BinaryFromEnv("DFLASH_EVALD"), "--state-dir", dir_->Join("state-typo"), "--config", config},
      {}, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err,
              HasSubstr("unknown key 'workrs' in the config file (nearest: 'workers'"));
}

}  // namespace
}  // namespace dflash
