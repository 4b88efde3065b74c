// The job RPCs on stored jobs and resources over a fake job service, on a
// real loopback server (job_rpcs_fixture.h): GetEval, ListEvals, CancelEval,
// ResubmitEval, CompareEvals, ExportProfile and CalibrateEval translate
// their arguments and records; unloads go through the job service; server
// info counts jobs and lists the fleet.
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/resource.h"
#include "service/job_rpcs_fixture.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::Describe;
using ::dflash::testing::JobRpcsTest;
using ::dflash::testing::kCreateMicros;
using ::dflash::testing::Record;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST_F(JobRpcsTest, GetEvalPassesTheIdAndTranslatesAFinishedRecord) {
  types::JobRecord rec = Record("ev-9", types::JobState::kSucceeded, 10);
  rec.end_unix_micros = kCreateMicros + 5'000'000;
  rec.drafter_fingerprint = "sha256:drafter";
  rec.dataset_fingerprint = "sha256:dataset";
  rec.result.emplace();
  rec.result->blocks = 10;
  rec.result->accept_length_pooled = 3.25;
  rec.result->dataset_fingerprint = "sha256:from-the-result";
  jobs_.Answer([&](auto& a) { a.record = rec; });
  pb::GetEvalRequest req;
  req.set_id("ev-9");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, req, &job)), "OK: ");
  EXPECT_THAT(jobs_.calls().got, ElementsAre("ev-9"));
  EXPECT_EQ(job.id(), "ev-9");
  EXPECT_EQ(job.state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.end_time().seconds(), 1'700'000'005);
  ASSERT_TRUE(job.has_result());
  EXPECT_EQ(job.result().blocks(), 10);
  EXPECT_DOUBLE_EQ(job.result().accept_length_pooled(), 3.25);
  // The submit-time fingerprint fills in only what the result lacks.
  EXPECT_EQ(job.result().drafter_fingerprint(), "sha256:drafter");
  EXPECT_EQ(job.result().dataset_fingerprint(), "sha256:from-the-result");
  EXPECT_THAT(job.recipe().fingerprint(), ::testing::StartsWith("r64:"));
  EXPECT_GT(job.recipe().fields_size(), 0);
}

TEST_F(JobRpcsTest, FailedAndInterruptedRecordsKeepTheirErrorAndFlags) {
  types::JobRecord rec = Record("ev-2", types::JobState::kFailed);
  rec.error_code = static_cast<int>(absl::StatusCode::kResourceExhausted);
  rec.error_message = "CUDA out of memory: 2147483648 bytes needed";
  jobs_.Answer([&](auto& a) { a.record = rec; });
  pb::GetEvalRequest req;
  req.set_id("ev-2");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, req, &job)), "OK: ");
  EXPECT_EQ(job.state(), pb::JOB_STATE_FAILED);
  EXPECT_EQ(job.error_code(), 8);  // google.rpc.Code RESOURCE_EXHAUSTED
  EXPECT_EQ(job.error_message(), "CUDA out of memory: 2147483648 bytes needed");

  rec = Record("ev-3", types::JobState::kInterrupted);
  rec.interrupted_by_restart = true;
  jobs_.Answer([&](auto& a) { a.record = rec; });
  req.set_id("ev-3");
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, req, &job)), "OK: ");
  EXPECT_EQ(job.state(), pb::JOB_STATE_INTERRUPTED);
  EXPECT_TRUE(job.interrupted_by_restart());
}

TEST_F(JobRpcsTest, ListEvalsTranslatesFiltersAndThePage) {
  types::JobPage page;
  page.jobs = {Record("ev-2", types::JobState::kSucceeded),
               Record("ev-1", types::JobState::kQueued)};
  page.next_page_token = "tok-2";
  jobs_.Answer([&](auto& a) { a.page = page; });
  pb::ListEvalsRequest req;
  req.set_state(pb::JOB_STATE_SUCCEEDED);
  req.set_drafter("step-4000");
  req.set_dataset("mt-bench");
  req.set_run("run-a");
  req.set_min_step(1000);
  req.set_max_step(5000);
  (*req.mutable_labels())["lr"] = "3e-4";
  req.set_page_size(20);
  req.set_page_token("tok-1");
  req.set_order_by_step(true);
  req.set_suite("core");
  pb::ListEvalsResponse resp;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, req, &resp)), "OK: ");
  ASSERT_EQ(jobs_.calls().listed.size(), 1u);
  const types::ListQuery q = jobs_.calls().listed[0];
  ASSERT_TRUE(q.state.has_value());
  EXPECT_EQ(*q.state, types::JobState::kSucceeded);
  EXPECT_EQ(q.drafter, "step-4000");
  EXPECT_EQ(q.dataset, "mt-bench");
  EXPECT_EQ(q.run, "run-a");
  ASSERT_TRUE(q.min_step.has_value() && q.max_step.has_value());
  EXPECT_EQ(*q.min_step, 1000);
  EXPECT_EQ(*q.max_step, 5000);
  EXPECT_THAT(q.labels, ElementsAre(Pair("lr", "3e-4")));
  EXPECT_EQ(q.page_size, 20);
  EXPECT_EQ(q.page_token, "tok-1");
  EXPECT_TRUE(q.order_by_step);
  EXPECT_EQ(q.suite, "core");
  EXPECT_FALSE(q.without_per_sample);
  ASSERT_EQ(resp.jobs_size(), 2);
  EXPECT_EQ(resp.jobs(0).id(), "ev-2");
  EXPECT_EQ(resp.jobs(0).state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(resp.jobs(1).id(), "ev-1");
  EXPECT_EQ(resp.jobs(1).state(), pb::JOB_STATE_QUEUED);
  EXPECT_EQ(resp.next_page_token(), "tok-2");
}

TEST_F(JobRpcsTest, ListEvalsLeavesUnsetFiltersOpen) {
  pb::ListEvalsResponse resp;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, pb::ListEvalsRequest(), &resp)),
            "OK: ");
  const types::ListQuery q = jobs_.calls().listed.at(0);
  EXPECT_FALSE(q.state.has_value());
  EXPECT_FALSE(q.min_step.has_value());  // 0 on the wire: no bound
  EXPECT_FALSE(q.max_step.has_value());
  EXPECT_EQ(q.page_size, 0);  // the store's default (50)
  EXPECT_EQ(q.page_token, "");
  EXPECT_FALSE(q.order_by_step);
  EXPECT_EQ(resp.jobs_size(), 0);
  EXPECT_EQ(resp.next_page_token(), "");
}

TEST_F(JobRpcsTest, ListEvalsRefusesBadFiltersBeforeTheJobService) {
  pb::ListEvalsResponse resp;
  pb::ListEvalsRequest req;
  req.set_min_step(5000);
  req.set_max_step(1000);
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, req, &resp)),
            "INVALID_ARGUMENT: min_step 5000 is greater than max_step 1000");
  req = pb::ListEvalsRequest();
  req.set_page_size(1001);
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, req, &resp)),
            "INVALID_ARGUMENT: page_size must be <= 1000; got 1001");
  req = pb::ListEvalsRequest();
  req.set_state(static_cast<pb::JobState>(42));
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, req, &resp)),
            "INVALID_ARGUMENT: state 42 is not a job state");
  req = pb::ListEvalsRequest();
  req.set_page_token("tok\x01");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, req, &resp)),
            "INVALID_ARGUMENT: page_token contains control character 0x01 at byte 3");
  EXPECT_THAT(jobs_.calls().listed, IsEmpty());
}

TEST_F(JobRpcsTest, CancelEvalPassesTheIdAndReturnsTheRecord) {
  types::JobRecord rec = Record("ev-5", types::JobState::kCancelled, 3);
  rec.end_unix_micros = kCreateMicros + 1'000'000;
  jobs_.Answer([&](auto& a) { a.record = rec; });
  pb::CancelEvalRequest req;
  req.set_id("ev-5");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::CancelEval, req, &job)), "OK: ");
  EXPECT_THAT(jobs_.calls().cancelled, ElementsAre("ev-5"));
  EXPECT_EQ(job.id(), "ev-5");
  EXPECT_EQ(job.state(), pb::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.progress().blocks_done(), 3);
  EXPECT_EQ(job.end_time().seconds(), 1'700'000'001);
}

TEST_F(JobRpcsTest, ResubmitEvalPassesTheIdAndReturnsTheNewJob) {
  types::JobRecord rec = Record("ev-6", types::JobState::kQueued);
  rec.resubmitted_from = "ev-5";
  jobs_.Answer([&](auto& a) { a.record = rec; });
  pb::ResubmitEvalRequest req;
  req.set_id("ev-5");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::ResubmitEval, req, &job)), "OK: ");
  EXPECT_THAT(jobs_.calls().resubmitted, ElementsAre("ev-5"));
  EXPECT_EQ(job.id(), "ev-6");
  EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
  EXPECT_EQ(job.resubmitted_from(), "ev-5");
}

TEST_F(JobRpcsTest, CompareEvalsPassesIdsAndOptionsAndTranslatesTheComparison) {
  core::Comparison c;
  c.jobs = {Record("ev-a", types::JobState::kSucceeded),
            Record("ev-b", types::JobState::kSucceeded)};
  c.warnings = {"no paired intervals: different samples"};
  c.accept_length = {3.0, 3.5};
  c.accept_length_delta = {0, 0.5};
  c.tau = {2.0, 2.5};
  core::PositionComparison p;
  p.position = 1;
  p.accuracy = {0.8, 0.9};
  p.accuracy_delta = {0, 0.1};
  p.acceptance = {0.8, 0.9};
  c.positions = {p};
  core::MetricDifference d;
  d.metric = "tau";
  d.job_index = 1;
  d.delta = 0.5;
  d.delta_ci = types::Interval{0.1, 0.9};
  d.excludes_zero = true;
  d.verdict = "better";
  c.differences = {d};
  jobs_.Answer([&](auto& a) { a.comparison = c; });
  pb::CompareEvalsRequest req;
  req.add_ids("ev-a");
  req.add_ids("ev-b");
  req.set_require_paired(true);
  req.set_allow_recipe_mismatch(true);
  req.set_ci_resamples(500);
  req.set_ci_seed(9);
  pb::CompareEvalsResponse resp;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::CompareEvals, req, &resp)), "OK: ");
  const auto compared = jobs_.calls().compared;
  ASSERT_EQ(compared.size(), 1u);
  EXPECT_THAT(compared[0].first, ElementsAre("ev-a", "ev-b"));
  EXPECT_TRUE(compared[0].second.require_paired);
  EXPECT_TRUE(compared[0].second.allow_recipe_mismatch);
  EXPECT_EQ(compared[0].second.resamples, 500);
  EXPECT_EQ(compared[0].second.seed, 9u);
  ASSERT_EQ(resp.jobs_size(), 2);
  EXPECT_EQ(resp.jobs(1).id(), "ev-b");
  EXPECT_THAT(resp.warnings(), ElementsAre("no paired intervals: different samples"));
  EXPECT_THAT(resp.accept_length(), ElementsAre(3.0, 3.5));
  EXPECT_THAT(resp.tau(), ElementsAre(2.0, 2.5));
  ASSERT_EQ(resp.positions_size(), 1);
  EXPECT_THAT(resp.positions(0).accuracy_delta(), ElementsAre(0, 0.1));
  ASSERT_EQ(resp.differences_size(), 1);
  EXPECT_EQ(resp.differences(0).verdict(), "better");
  EXPECT_DOUBLE_EQ(resp.differences(0).delta_ci().hi(), 0.9);

  // Unset resamples: the default; a repeated id never reaches the service.
  req.set_ci_resamples(0);
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::CompareEvals, req, &resp)), "OK: ");
  EXPECT_EQ(jobs_.calls().compared.at(1).second.resamples, 1000);
  req.add_ids("ev-a");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::CompareEvals, req, &resp)),
            "INVALID_ARGUMENT: ids[2] repeats ids[0] ('ev-a')");
  EXPECT_EQ(jobs_.calls().compared.size(), 2u);

  jobs_.Answer([](auto& a) {
    a.error = absl::FailedPreconditionError("compare: ev-b's recipe differs: block_size 16 vs 8");
  });
  req.mutable_ids()->RemoveLast();
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::CompareEvals, req, &resp)),
            "FAILED_PRECONDITION: compare: ev-b's recipe differs: block_size 16 vs 8");
}

TEST_F(JobRpcsTest, ExportProfileAndCalibrateEvalPassTheirArguments) {
  jobs_.Answer([](auto& a) {
    a.profile.text = "{\"acceptance\": [0.9]}";
    a.profile.curve = "t=0.7 policy=argmax";
    a.calibration.calibration.source = "vllm";
    a.calibration.calibration.verdict = "within";
    a.calibration.calibration.ratio = 0.99;
    a.calibration.job = Record("ev-1", types::JobState::kSucceeded);
  });
  pb::ExportProfileRequest ex;
  ex.set_id("ev-1");
  ex.set_format("vllm");
  ex.set_setting(2);
  pb::ExportProfileResponse profile;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::ExportProfile, ex, &profile)), "OK: ");
  const auto exported = jobs_.calls().exported;
  ASSERT_EQ(exported.size(), 1u);
  EXPECT_EQ(exported[0].id, "ev-1");
  EXPECT_EQ(exported[0].format, "vllm");
  EXPECT_EQ(exported[0].setting, 2);
  EXPECT_EQ(profile.format(), "vllm");
  EXPECT_EQ(profile.curve(), "t=0.7 policy=argmax");
  EXPECT_EQ(profile.profile_json(), "{\"acceptance\": [0.9]}");
  ex.set_setting(-1);
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ExportProfile, ex, &profile)),
            "INVALID_ARGUMENT: setting must be >= 0; got -1");

  pb::CalibrateEvalRequest cal;
  cal.set_id("ev-1");
  cal.set_setting(1);
  pb::ServedFile* f = cal.add_served();
  f->set_path("before.prom");
  f->set_contents("a 1\n");
  f = cal.add_served();
  f->set_path("after.prom");
  f->set_contents(std::string("a 2\n\0\xFF", 6));  // bytes, not text
  pb::CalibrateEvalResponse calibrated;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::CalibrateEval, cal, &calibrated)), "OK: ");
  const auto calls = jobs_.calls().calibrated;
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].id, "ev-1");
  EXPECT_EQ(calls[0].setting, 1);
  EXPECT_THAT(calls[0].files, ElementsAre(Pair("before.prom", "a 1\n"),
                                          Pair("after.prom", std::string("a 2\n\0\xFF", 6))));
  EXPECT_EQ(calibrated.calibration().source(), "vllm");
  EXPECT_EQ(calibrated.calibration().verdict(), "within");
  EXPECT_DOUBLE_EQ(calibrated.calibration().ratio(), 0.99);
  EXPECT_EQ(calibrated.job().id(), "ev-1");

  jobs_.Answer([](auto& a) {
    a.error =
        absl::FailedPreconditionError("job 'ev-1' is RUNNING; only a SUCCEEDED job has numbers");
  });
  ex.set_setting(0);
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ExportProfile, ex, &profile)),
            "FAILED_PRECONDITION: job 'ev-1' is RUNNING; only a SUCCEEDED job has numbers");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::CalibrateEval, cal, &calibrated)),
            "FAILED_PRECONDITION: job 'ev-1' is RUNNING; only a SUCCEEDED job has numbers");
}

TEST_F(JobRpcsTest, UnloadsGoThroughTheJobService) {
  // Were the core asked directly, the call would fail with this.
  core_.next_error = absl::InternalError("the core's Unload was called");
  jobs_.Answer([](auto& a) {
    a.unloaded.bytes = 1234;
    a.unloaded.device = "cpu";
  });
  pb::UnloadRequest req;
  req.set_name("step-4000");
  pb::UnloadResponse resp;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::UnloadDrafter, req, &resp)), "OK: ");
  EXPECT_EQ(resp.resource().name(), "step-4000");
  EXPECT_EQ(resp.resource().kind(), pb::RESOURCE_KIND_DRAFTER);
  EXPECT_EQ(resp.resource().bytes(), 1234);
  req.set_name("qwen3-8b");
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::UnloadTarget, req, &resp)), "OK: ");
  EXPECT_EQ(resp.resource().kind(), pb::RESOURCE_KIND_TARGET);
  req.set_name("mt-bench");
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::UnloadDataset, req, &resp)), "OK: ");
  EXPECT_EQ(resp.resource().kind(), pb::RESOURCE_KIND_DATASET);
  EXPECT_THAT(jobs_.calls().unloaded,
              ElementsAre(Pair(resident::ResourceKind::kDrafter, "step-4000"),
                          Pair(resident::ResourceKind::kTarget, "qwen3-8b"),
                          Pair(resident::ResourceKind::kDataset, "mt-bench")));

  jobs_.Answer([](auto& a) {
    a.error = absl::FailedPreconditionError(
        "drafter 'step-4000' is named by unfinished jobs ev-1, ev-2; cancel them or wait");
  });
  req.set_name("step-4000");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::UnloadDrafter, req, &resp)),
            "FAILED_PRECONDITION: drafter 'step-4000' is named by unfinished jobs ev-1, ev-2; "
            "cancel them or wait");
  req.set_name("");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::UnloadDrafter, req, &resp)),
            "INVALID_ARGUMENT: name is empty");
  EXPECT_EQ(jobs_.calls().unloaded.size(), 4u);
}

TEST_F(JobRpcsTest, ServerInfoCountsJobsAndListsTheFleet) {
  jobs_.Answer([](auto& a) {
    a.queued = 3;
    a.running = 1;
  });
  pb::ServerInfo info;
  ASSERT_EQ(
      Describe(Call(&pb::DrafterEval::Stub::GetServerInfo, pb::GetServerInfoRequest(), &info)),
      "OK: ");
  EXPECT_EQ(info.queued_jobs(), 3);
  EXPECT_EQ(info.running_jobs(), 1);
  EXPECT_EQ(info.fleet_size(), 0);  // a single-host store: Fleet() is Unimplemented

  core::FleetMember m;
  m.name = "10.0.0.5:50051";
  m.drafters = {"step-4000"};
  m.running_jobs = {"ev-1"};
  m.heartbeat_age_seconds = 1.5;
  jobs_.Answer([&](auto& a) { a.fleet = std::vector<core::FleetMember>{m}; });
  ASSERT_EQ(
      Describe(Call(&pb::DrafterEval::Stub::GetServerInfo, pb::GetServerInfoRequest(), &info)),
      "OK: ");
  ASSERT_EQ(info.fleet_size(), 1);
  EXPECT_EQ(info.fleet(0).name(), "10.0.0.5:50051");
  EXPECT_THAT(info.fleet(0).drafters(), ElementsAre("step-4000"));
  EXPECT_THAT(info.fleet(0).running_jobs(), ElementsAre("ev-1"));
  EXPECT_DOUBLE_EQ(info.fleet(0).heartbeat_age_seconds(), 1.5);
}

TEST_F(JobRpcsTest, ListResourcesFleetNeedsASharedStore) {
  pb::ListResourcesRequest req;
  req.set_fleet(true);
  pb::ListResourcesResponse resp;
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListResources, req, &resp)),
            "FAILED_PRECONDITION: --fleet: this server has no fleet (its results store is not a "
            "shared PostgreSQL database; see --store)");
  jobs_.Answer([](auto& a) { a.fleet = absl::UnavailableError("the fleet store is unreachable"); });
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListResources, req, &resp)),
            "UNAVAILABLE: the fleet store is unreachable");
  core::FleetMember m;
  m.name = "10.0.0.6:50051";
  jobs_.Answer([&](auto& a) { a.fleet = std::vector<core::FleetMember>{m}; });
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListResources, req, &resp)), "OK: ");
  ASSERT_EQ(resp.fleet_size(), 1);
  EXPECT_EQ(resp.fleet(0).name(), "10.0.0.6:50051");
}

}  // namespace
}  // namespace dflash::service
