// ServerMetrics (metrics/server_metrics.h): what each OpsObserver hook adds
// to the exposition text, the job gauges (from the hooks, or from the core
// when no hook reported), the gauges read from the core at each scrape, and
// the same text served over HTTP. Values are read back sample by sample.
#include "metrics/server_metrics.h"

#include <string>

#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/device.h"
#include "resident/resource.h"
#include "test_util/http_get.h"
#include "test_util/status_matchers.h"

namespace dflash::metrics {
namespace {

using ::dflash::testing::FakeEvalCore;
using ::dflash::testing::HttpGet;
using ::dflash::testing::MetricSample;
using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

class ServerMetricsTest : public ::testing::Test {
 protected:
  double Sample(ServerMetrics& m, const std::string& series) {
    return MetricSample(m.Render(), series);
  }
};

TEST_F(ServerMetricsTest, ReadyStartsAtZero) {
  ServerMetrics m(nullptr);
  EXPECT_EQ(Sample(m, "dflash_evald_ready"), 0);
  m.SetReady(true);
  EXPECT_EQ(Sample(m, "dflash_evald_ready"), 1);
  m.SetReady(false);
  EXPECT_EQ(Sample(m, "dflash_evald_ready"), 0);
}

TEST_F(ServerMetricsTest, RpcsCountByMethodAndCode) {
  ServerMetrics m(nullptr);
  m.OnRpc("RunEval", absl::StatusCode::kOk, 0.5);
  m.OnRpc("RunEval", absl::StatusCode::kOk, 0.25);
  m.OnRpc("RunEval", absl::StatusCode::kNotFound, 0.003);
  const std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_rpc_requests_total{code="OK",method="RunEval"})"),
            2);
  EXPECT_EQ(
      MetricSample(text, R"(dflash_evald_rpc_requests_total{code="NOT_FOUND",method="RunEval"})"),
      1);
  const std::string ok = R"(dflash_evald_rpc_duration_seconds)";
  EXPECT_EQ(MetricSample(text, ok + R"(_count{code="OK",method="RunEval"})"), 2);
  EXPECT_EQ(MetricSample(text, ok + R"(_sum{code="OK",method="RunEval"})"), 0.75);
  // Buckets double from 1 ms: 0.25 s falls in le=0.256, 0.5 s in le=0.512.
  EXPECT_EQ(MetricSample(text, ok + R"(_bucket{code="OK",method="RunEval",le="0.128"})"), 0);
  EXPECT_EQ(MetricSample(text, ok + R"(_bucket{code="OK",method="RunEval",le="0.256"})"), 1);
  EXPECT_EQ(MetricSample(text, ok + R"(_bucket{code="OK",method="RunEval",le="0.512"})"), 2);
  EXPECT_EQ(MetricSample(text, ok + R"(_bucket{code="OK",method="RunEval",le="524.288"})"), 2);
  EXPECT_EQ(MetricSample(text, ok + R"(_bucket{code="NOT_FOUND",method="RunEval",le="0.004"})"), 1);
}

TEST_F(ServerMetricsTest, OnlySuccessfulLoadsAreTimed) {
  ServerMetrics m(nullptr);
  m.OnLoad("drafter", absl::StatusCode::kOk, 2.0);
  m.OnLoad("target", absl::StatusCode::kInvalidArgument, 1.0);
  const std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_loads_total{code="OK",kind="drafter"})"), 1);
  EXPECT_EQ(
      MetricSample(text, R"(dflash_evald_loads_total{code="INVALID_ARGUMENT",kind="target"})"), 1);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_load_duration_seconds_count{kind="drafter"})"), 1);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_load_duration_seconds_sum{kind="drafter"})"), 2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_load_duration_seconds_count{kind="target"})"), -1);
}

TEST_F(ServerMetricsTest, SuccessfulEvalAddsItsCountsAndThroughput) {
  ServerMetrics m(nullptr);
  EvalCounts counts;
  counts.blocks = 10;
  counts.tokens_scored = 40;
  counts.compute_seconds = 2.0;
  m.OnEval(absl::StatusCode::kOk, 3.0, &counts);
  m.OnEval(absl::StatusCode::kInternal, 1.0, nullptr);  // failed: counted, not timed
  const std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_evals_total{code="OK"})"), 1);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_evals_total{code="INTERNAL"})"), 1);
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_duration_seconds_count"), 1);
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_duration_seconds_sum"), 3);
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_blocks_total"), 10);
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_tokens_total"), 40);
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_compute_seconds_total"), 2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_last_eval_throughput{unit="blocks_per_second"})"),
            5);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_last_eval_throughput{unit="tokens_per_second"})"),
            20);
}

TEST_F(ServerMetricsTest, EvalWithoutComputeTimeLeavesThroughput) {
  ServerMetrics m(nullptr);
  EvalCounts first;
  first.blocks = 6;
  first.tokens_scored = 12;
  first.compute_seconds = 3.0;
  m.OnEval(absl::StatusCode::kOk, 4.0, &first);
  EvalCounts instant;
  instant.blocks = 1;
  instant.tokens_scored = 2;
  m.OnEval(absl::StatusCode::kOk, 0.5, &instant);
  const std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, "dflash_evald_eval_blocks_total"), 7);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_last_eval_throughput{unit="blocks_per_second"})"),
            2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_last_eval_throughput{unit="tokens_per_second"})"),
            4);
}

TEST_F(ServerMetricsTest, FinishedJobsCountByLowerCaseState) {
  ServerMetrics m(nullptr);
  m.OnJobFinished("SUCCEEDED", 4.0);
  m.OnJobFinished("succeeded", 2.0);
  m.OnJobFinished("Cancelled", 1.0);
  const std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs_finished_total{state="succeeded"})"), 2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs_finished_total{state="cancelled"})"), 1);
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_duration_seconds_count"), 3);
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_duration_seconds_sum"), 7);
}

TEST_F(ServerMetricsTest, JobStatesAbsentCountZero) {
  ServerMetrics m(nullptr);
  m.OnJobStates({{"queued", 3}, {"RUNNING", 1}});
  std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="queued"})"), 3);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="running"})"), 1);
  for (const char* s : {"succeeded", "failed", "cancelled", "interrupted"}) {
    EXPECT_EQ(MetricSample(text, std::string(R"(dflash_evald_jobs{state=")") + s + "\"}"), 0) << s;
  }
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_queue_length"), 3);

  m.OnJobStates({{"running", 1}, {"succeeded", 3}});
  text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="queued"})"), 0);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="succeeded"})"), 3);
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_queue_length"), 0);
}

class ServerMetricsCoreTest : public ServerMetricsTest {
 protected:
  ServerMetricsCoreTest() {
    core_.info.server_version = "1.2.3";
    core_.info.git_sha = "abc123";
    core_.info.libtorch_version = "2.1.0";
    core_.info.blas = "openblas";
    core_.info.uptime_seconds = 42.5;
    core_.info.queued_jobs = 2;
    core_.info.running_jobs = 1;
    resident::DeviceInfo cpu;
    cpu.name = "cpu";
    cpu.total_memory_bytes = 1000;
    cpu.used_memory_bytes = 300;
    core_.info.devices.push_back(cpu);
    core_.resources.push_back(Resource(resident::ResourceKind::kDrafter, 100));
    core_.resources.push_back(Resource(resident::ResourceKind::kDrafter, 50));
    core_.resources.push_back(Resource(resident::ResourceKind::kTarget, 200));
  }

  static resident::ResourceInfo Resource(resident::ResourceKind kind, int64_t bytes) {
    resident::ResourceInfo r;
    r.kind = kind;
    r.bytes = bytes;
    return r;
  }

  FakeEvalCore core_;
};

TEST_F(ServerMetricsCoreTest, ResidentObjectsAndDevicesAreReadAtEachScrape) {
  ServerMetrics m(&core_);
  std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_bytes{kind="drafter"})"), 150);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_bytes{kind="target"})"), 200);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_bytes{kind="dataset"})"), 0);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_objects{kind="drafter"})"), 2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_objects{kind="target"})"), 1);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_objects{kind="dataset"})"), 0);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_device_memory_used_bytes{device="cpu"})"), 300);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_device_memory_total_bytes{device="cpu"})"), 1000);
  EXPECT_EQ(MetricSample(text, "dflash_evald_uptime_seconds"), 42.5);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_build_info{blas="openblas",git_sha="abc123",)"
                               R"(libtorch="2.1.0",version="1.2.3"})"),
            1);

  core_.resources.pop_back();  // the target unloaded
  core_.info.uptime_seconds = 50;
  text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_bytes{kind="target"})"), 0);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_resident_objects{kind="target"})"), 0);
  EXPECT_EQ(MetricSample(text, "dflash_evald_uptime_seconds"), 50);
}

TEST_F(ServerMetricsCoreTest, JobGaugesComeFromTheCoreUntilAHookReports) {
  ServerMetrics m(&core_);
  std::string text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="queued"})"), 2);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="running"})"), 1);
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_queue_length"), 2);

  m.OnJobStates({{"queued", 5}});
  text = m.Render();
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="queued"})"), 5);
  EXPECT_EQ(MetricSample(text, R"(dflash_evald_jobs{state="running"})"), 0);
  EXPECT_EQ(MetricSample(text, "dflash_evald_job_queue_length"), 5);
}

TEST_F(ServerMetricsCoreTest, ServesTheRenderedTextOverHttp) {
  ServerMetrics m(&core_);
  m.SetReady(true);
  m.OnRpc("GetServerInfo", absl::StatusCode::kOk, 0.01);
  ASSERT_OK_AND_ASSIGN(int port, m.Serve("127.0.0.1:0"));
  const std::string answer = HttpGet(port, "/metrics");
  EXPECT_THAT(answer, HasSubstr("\r\n\r\n# HELP dflash_evald_"));
  EXPECT_EQ(MetricSample(answer, "dflash_evald_ready"), 1);
  EXPECT_EQ(
      MetricSample(answer, R"(dflash_evald_rpc_requests_total{code="OK",method="GetServerInfo"})"),
      1);
  EXPECT_EQ(MetricSample(answer, R"(dflash_evald_resident_bytes{kind="drafter"})"), 150);
}

TEST_F(ServerMetricsCoreTest, ServeRefusesABadAddress) {
  ServerMetrics m(&core_);
  EXPECT_THAT(m.Serve("9100").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::Eq("metrics address '9100' is not HOST:PORT")));
}

}  // namespace
}  // namespace dflash::metrics
