// JobServiceImpl's serving-profile and calibration calls (core/served_jobs.cc)
// over the fake core of job_service_fixture.h: a finished job's numbers as
// the file of the format asked for, and served counters checked against
// them with the calibration stored on the job (stamped with the time, one
// more per call, none when anything fails). Each error is the first
// input's that is wrong, in the order format or files, job, setting.
#include <string>
#include <utility>
#include <vector>

#include "core/acceptance_curves.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_service_fixture.h"
#include "served/calibration.h"
#include "served/serving_profile.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::SizeIs;
using types::JobRecord;
using Files = std::vector<std::pair<std::string, std::string>>;

// z-lab's benchmark output for block size 3 (two drafts per step).
constexpr char kZlab[] =
    "Average Acceptance length: 2.10\n"
    "Acceptance length histogram: ['0.0%', '20.0%', '40.0%', '40.0%']\n";

// Jobs whose RunEval gives block size 3, 10 replay blocks: 8 reach
// position 2 and 4 accept both drafts (acceptance_curves_test.cc's job).
class ServedJobsTest : public JobServiceImplTest {
 protected:
  void SetUp() override {
    JobServiceImplTest::SetUp();
    types::EvalResult& r = core_.eval_result;
    r.block_size = 3;
    r.blocks = 10;
    r.samples = 2;
    r.mode = types::Mode::kReplay;
    r.positions.resize(2);
    r.positions[0].accepted = 8;
    r.positions[1].accepted = 4;
    r.accepted_histogram = {2, 4, 4};
    r.accept_length_pooled = 2.2;
    r.tau = 2.1;
    r.tau_ci = types::Interval{1.9, 2.3};
    Start();
  }

  // A SUCCEEDED job, as stored.
  JobRecord Succeeded() {
    auto job = service_->Submit(Request());
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? WaitDone(job->id) : JobRecord{};
  }
  // A FAILED one.
  JobRecord Failed() {
    core_.next_error = absl::InternalError("boom");
    JobRecord failed = Succeeded();
    core_.next_error = absl::OkStatus();
    return failed;
  }
};

TEST_F(ServedJobsTest, ExportProfileWritesTheGreedyCurveInTheFormatAsked) {
  const JobRecord job = Succeeded();
  ASSERT_EQ(job.state, types::JobState::kSucceeded);
  ASSERT_OK_AND_ASSIGN(JobService::ProfileExport vllm, service_->ExportProfile(job.id, "vllm", 0));
  EXPECT_EQ(vllm.curve, "greedy");
  ASSERT_OK_AND_ASSIGN(served::AcceptanceCurve curve, CurveFromJob(job, 0));
  EXPECT_THAT(served::ExportProfile(curve, served::ProfileFormat::kVllm),
              ::dflash::testing::IsOkAndHolds(vllm.text));
  ASSERT_OK_AND_ASSIGN(JobService::ProfileExport sglang,
                       service_->ExportProfile(job.id, "sglang", 0));
  EXPECT_NE(sglang.text, vllm.text);
}

TEST_F(ServedJobsTest, ExportProfileRefusesTheFormatThenTheJobThenTheSetting) {
  EXPECT_THAT(service_->ExportProfile("ev-none", "csv", 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("unknown profile format 'csv' (known: modelopt, vllm, sglang)")));
  EXPECT_THAT(service_->ExportProfile("ev-none", "vllm", 0),
              StatusIs(absl::StatusCode::kNotFound, Eq("no job with id 'ev-none'")));
  const JobRecord failed = Failed();
  EXPECT_THAT(service_->ExportProfile(failed.id, "vllm", 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("job " + failed.id + " is FAILED; it needs a SUCCEEDED result")));
  const JobRecord job = Succeeded();
  EXPECT_THAT(service_->ExportProfile(job.id, "modelopt", 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("setting 1: job " + job.id + " has 0 (greedy)")));
}

TEST_F(ServedJobsTest, CalibrateStoresEachCalibrationWithTheJob) {
  const JobRecord job = Succeeded();
  ASSERT_OK_AND_ASSIGN(JobService::CalibrationResult first,
                       service_->Calibrate(job.id, Files{{"zlab.txt", kZlab}}, 0));
  EXPECT_EQ(first.calibration.source, "zlab");
  EXPECT_EQ(first.calibration.curve_label, "greedy");
  EXPECT_DOUBLE_EQ(first.calibration.served_accept_length, 2.1);
  EXPECT_THAT(first.calibration.created,
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  ASSERT_THAT(first.job.calibrations, SizeIs(1));
  EXPECT_EQ(first.job.calibrations[0], served::CalibrationToJson(first.calibration).dump());
  ASSERT_OK(service_->Calibrate(job.id, Files{{"zlab.txt", kZlab}}, 0).status());
  ASSERT_OK_AND_ASSIGN(JobRecord stored, service_->Get(job.id));
  EXPECT_THAT(stored.calibrations, SizeIs(2));  // one more per call
}

TEST_F(ServedJobsTest, CalibrateRefusesFilesThenTheJobAndStoresNothing) {
  const JobRecord job = Succeeded();
  EXPECT_THAT(service_->Calibrate(job.id, Files{}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("no served counters: give two vLLM scrapes (before, after), SGLang "
                          "meta_info JSON lines or z-lab's benchmark output")));
  EXPECT_THAT(service_->Calibrate("ev-none", Files{{"notes.txt", "hello\nworld"}}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("file 'notes.txt' is not a vLLM /metrics scrape, SGLang meta_info JSON "
                          "lines or z-lab benchmark output (first line: 'hello')")));
  EXPECT_THAT(service_->Calibrate("ev-none", Files{{"zlab.txt", kZlab}}, 0),
              StatusIs(absl::StatusCode::kNotFound, Eq("no job with id 'ev-none'")));
  const JobRecord failed = Failed();
  EXPECT_THAT(service_->Calibrate(failed.id, Files{{"zlab.txt", kZlab}}, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("job " + failed.id + " is FAILED; it needs a SUCCEEDED result")));
  // Served with three drafts per step: not this job's block size.
  const std::string k3 =
      "Average Acceptance length: 2.10\n"
      "Acceptance length histogram: ['0.0%', '20.0%', '40.0%', '20.0%', '20.0%']\n";
  EXPECT_THAT(service_->Calibrate(job.id, Files{{"zlab.txt", k3}}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("zlab verified 3 draft tokens per step but job " + job.id +
                          " has block size 3 (2 drafts per step): serve with "
                          "num_speculative_tokens=2 or evaluate with that block size")));
  ASSERT_OK_AND_ASSIGN(JobRecord stored, service_->Get(job.id));
  EXPECT_THAT(stored.calibrations, IsEmpty());
}

}  // namespace
}  // namespace dflash::core
