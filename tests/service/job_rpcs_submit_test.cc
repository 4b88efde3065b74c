// SubmitEval over a fake job service, on a real loopback server with a real
// stub (job_rpcs_fixture.h): the request translated to a job request and
// the record to an EvalJob, the job service's errors passed through
// unchanged, and the service's own checks of bad and unparsable requests
// before the job service.
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/job_rpcs_fixture.h"
#include "test_util/wire_bytes.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::Describe;
using ::dflash::testing::JobRpcsTest;
using ::dflash::testing::kCreateMicros;
using ::dflash::testing::LenField;
using ::dflash::testing::Record;
using ::dflash::testing::Tag;
using ::dflash::testing::Varint;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// A SubmitEvalRequest with every field set.
pb::SubmitEvalRequest FullRequest() {
  pb::SubmitEvalRequest req;
  pb::EvalRequest& r = *req.mutable_request();
  r.set_drafter("step-4000");
  r.set_checkpoint_path("/ckpt/step-4000");
  r.set_dataset("mt-bench");
  r.set_target("qwen3-8b");
  r.set_mode(pb::EVAL_MODE_REPLAY);
  r.set_max_samples(64);
  r.set_max_blocks(8);
  r.set_anchors(pb::ANCHOR_STRATEGY_RANDOM);
  r.set_seed(7);
  r.set_block_size(16);
  r.set_max_new_tokens(256);
  r.set_semantics("zlab-2025");
  r.set_metrics("acceptance");
  r.set_full_positions(true);
  pb::SamplingSetting* s = r.add_sampling();
  s->set_temperature(0.7);
  s->set_top_k(20);  // top_p 0 on the wire: off (1.0)
  s = r.add_sampling();
  s->set_temperature(1.0);
  s->set_top_p(0.95);
  r.add_policies("argmax");
  r.add_policies("match");
  r.set_engine("vllm");
  r.set_ci("none");
  r.set_ci_resamples(500);
  r.set_shards(4);
  r.set_run("run-a");
  r.set_step(4000);
  (*r.mutable_labels())["lr"] = "3e-4";
  (*r.mutable_labels())["branch"] = "main";
  r.set_unload_after(true);
  r.set_dataset_path("/data/mt-bench");
  r.set_target_path("/models/qwen3-8b");
  r.set_gate("previous");
  r.set_gate_metric("accept_length");
  r.set_gate_min_delta(0.1);
  r.set_gate_allow_recipe_mismatch(true);
  r.set_gate_floor(0.25);
  return req;
}

// The options of FullRequest(), as the job request holds them.
void ExpectFullOptions(const types::EvalOptions& o) {
  EXPECT_EQ(o.mode, types::Mode::kReplay);
  EXPECT_EQ(o.max_samples, 64);
  EXPECT_EQ(o.max_blocks, 8);
  EXPECT_EQ(o.anchors, types::AnchorStrategy::kRandom);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.block_size, 16);
  EXPECT_EQ(o.max_new_tokens, 256);
  EXPECT_EQ(o.semantics, types::Semantics::kZlab2025);
  EXPECT_EQ(o.metrics, types::MetricSet::kAcceptance);
  EXPECT_TRUE(o.full_positions);
  ASSERT_EQ(o.sampling.size(), 2u);
  EXPECT_DOUBLE_EQ(o.sampling[0].temperature, 0.7);
  EXPECT_DOUBLE_EQ(o.sampling[0].top_p, 1.0);
  EXPECT_EQ(o.sampling[0].top_k, 20);
  EXPECT_DOUBLE_EQ(o.sampling[1].temperature, 1.0);
  EXPECT_DOUBLE_EQ(o.sampling[1].top_p, 0.95);
  EXPECT_EQ(o.sampling[1].top_k, 0);
  EXPECT_THAT(o.policies,
              ElementsAre(types::ProposalPolicy::kArgmax, types::ProposalPolicy::kMatch));
  EXPECT_EQ(o.engine, "vllm");
  EXPECT_EQ(o.ci, types::CiMethod::kNone);
  EXPECT_EQ(o.ci_resamples, 500);
  EXPECT_EQ(o.shards, 4);
}

TEST_F(JobRpcsTest, SubmitEvalTranslatesTheRequestToAJobRequest) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kQueued); });
  pb::SubmitEvalRequest req = FullRequest();
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)), "OK: ");

  const std::vector<types::JobRequest> submitted = jobs_.calls().submitted;
  ASSERT_EQ(submitted.size(), 1u);
  const types::JobRequest& got = submitted[0];
  EXPECT_EQ(got.params.drafter, "step-4000");
  EXPECT_EQ(got.params.checkpoint_path, "/ckpt/step-4000");
  EXPECT_EQ(got.params.dataset, "mt-bench");
  EXPECT_EQ(got.params.target, "qwen3-8b");
  ASSERT_NO_FATAL_FAILURE(ExpectFullOptions(got.params.options));
  EXPECT_EQ(got.run, "run-a");
  EXPECT_EQ(got.step, 4000);
  EXPECT_THAT(got.labels, ElementsAre(Pair("branch", "main"), Pair("lr", "3e-4")));
  EXPECT_TRUE(got.unload_after);
  EXPECT_EQ(got.dataset_path, "/data/mt-bench");
  EXPECT_EQ(got.target_path, "/models/qwen3-8b");
  EXPECT_EQ(got.gate.reference, "previous");
  EXPECT_EQ(got.gate.metric, "accept_length");
  EXPECT_DOUBLE_EQ(got.gate.min_delta, 0.1);
  EXPECT_TRUE(got.gate.allow_recipe_mismatch);
  EXPECT_TRUE(got.gate.has_floor);
  EXPECT_DOUBLE_EQ(got.gate.floor, 0.25);
  EXPECT_THAT(got.suite_datasets, IsEmpty());  // the server's to fill, not the client's

  EXPECT_EQ(job.id(), "ev-1");
  EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
}

TEST_F(JobRpcsTest, SubmitEvalDefaultsAndTheGateMetricWhenUnset) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kQueued); });
  pb::SubmitEvalRequest req;
  req.mutable_request()->set_drafter("d");
  req.mutable_request()->set_dataset("s");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)), "OK: ");
  const types::JobRequest got = jobs_.calls().submitted.at(0);
  const types::EvalOptions defaults;
  EXPECT_EQ(got.params.options.mode, types::Mode::kAnchor);
  EXPECT_EQ(got.params.options.anchors, types::AnchorStrategy::kEven);
  EXPECT_EQ(got.params.options.semantics, types::Semantics::kZlabCurrent);
  EXPECT_EQ(got.params.options.metrics, types::MetricSet::kAll);
  EXPECT_EQ(got.params.options.ci, types::CiMethod::kBootstrap);
  EXPECT_EQ(got.params.options.ci_resamples, defaults.ci_resamples);
  EXPECT_EQ(got.gate.reference, "");
  EXPECT_EQ(got.gate.metric, "tau");
  EXPECT_FALSE(got.gate.has_floor);
}

TEST_F(JobRpcsTest, SubmitEvalTranslatesTheRecordToAnEvalJob) {
  types::JobRecord rec = Record("ev-7", types::JobState::kRunning, 4);
  rec.request.params.options.mode = types::Mode::kReplay;
  rec.request.params.options.sampling.push_back({0.7, 0.9, 20});
  rec.request.labels = {{"lr", "3e-4"}};
  rec.request.suite_datasets = {"a", "b"};
  rec.progress.samples_done = 2;
  rec.progress.samples_total = 5;
  rec.progress.elapsed_seconds = 1.5;
  rec.progress.eta_seconds = 2.25;
  rec.progress.blocks_total_is_bound = true;
  rec.start_unix_micros = kCreateMicros + 2'000'000;
  rec.resubmitted_from = "ev-3";
  rec.server = "10.0.0.5:50051";
  rec.placement = "drafter 'step-4000' is on 10.0.0.5:50051";
  rec.attempts.push_back({"10.0.0.4:50051", kCreateMicros, kCreateMicros + 1'000'000, "lost"});
  jobs_.Answer([&](auto& a) { a.record = rec; });
  pb::SubmitEvalRequest req;
  req.mutable_request()->set_drafter("step-4000");
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)), "OK: ");

  EXPECT_EQ(job.id(), "ev-7");
  EXPECT_EQ(job.state(), pb::JOB_STATE_RUNNING);
  EXPECT_EQ(job.request().drafter(), "step-4000");
  EXPECT_EQ(job.request().dataset(), "mt-bench");
  EXPECT_EQ(job.request().mode(), pb::EVAL_MODE_REPLAY);
  ASSERT_EQ(job.request().sampling_size(), 1);
  EXPECT_DOUBLE_EQ(job.request().sampling(0).top_p(), 0.9);
  EXPECT_EQ(job.request().sampling(0).top_k(), 20);
  EXPECT_EQ(job.request().run(), "run-a");
  EXPECT_EQ(job.request().step(), 4000);
  EXPECT_EQ(job.request().labels().at("lr"), "3e-4");
  EXPECT_THAT(job.request().suite_datasets(), ElementsAre("a", "b"));
  EXPECT_EQ(job.progress().blocks_done(), 4);
  EXPECT_EQ(job.progress().blocks_total(), 10);
  EXPECT_EQ(job.progress().samples_done(), 2);
  EXPECT_EQ(job.progress().samples_total(), 5);
  EXPECT_DOUBLE_EQ(job.progress().elapsed_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(job.progress().eta_seconds(), 2.25);
  EXPECT_TRUE(job.progress().blocks_total_is_upper_bound());
  EXPECT_EQ(job.create_time().seconds(), 1'700'000'000);
  EXPECT_EQ(job.create_time().nanos(), 123'456'000);
  EXPECT_EQ(job.start_time().seconds(), 1'700'000'002);
  EXPECT_FALSE(job.has_end_time());  // 0: not set, not the epoch
  EXPECT_FALSE(job.has_result());
  EXPECT_FALSE(job.has_recipe());
  EXPECT_EQ(job.server_version(), "9.9.9");
  EXPECT_EQ(job.resubmitted_from(), "ev-3");
  EXPECT_EQ(job.server(), "10.0.0.5:50051");
  EXPECT_EQ(job.placement(), "drafter 'step-4000' is on 10.0.0.5:50051");
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).server(), "10.0.0.4:50051");
  EXPECT_EQ(job.attempts(0).outcome(), "lost");
  EXPECT_EQ(job.attempts(0).end_time().seconds(), 1'700'000'001);
}

TEST_F(JobRpcsTest, JobServiceErrorsKeepTheirCodeAndMessage) {
  const std::vector<absl::Status> errors = {
      absl::FailedPreconditionError(
          "drafter 'step-4000' is not resident; load it or give checkpoint_path"),
      absl::NotFoundError("no job 'ev-404'"),
      absl::ResourceExhaustedError("the queue holds 64 jobs; the server allows 64 (--max-queued)"),
      absl::UnavailableError("the results store is unreachable: connection refused"),
      absl::InvalidArgumentError("gate 'best' needs a run"),
  };
  for (const absl::Status& e : errors) {
    SCOPED_TRACE(Describe(e));
    jobs_.Answer([&](auto& a) { a.error = e; });
    pb::EvalJob job;
    pb::SubmitEvalRequest submit;
    submit.mutable_request()->set_drafter("step-4000");
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, submit, &job)), Describe(e));
    pb::GetEvalRequest get;
    get.set_id("ev-404");
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, get, &job)), Describe(e));
    pb::CancelEvalRequest cancel;
    cancel.set_id("ev-404");
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::CancelEval, cancel, &job)), Describe(e));
    pb::ResubmitEvalRequest resubmit;
    resubmit.set_id("ev-404");
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ResubmitEval, resubmit, &job)), Describe(e));
    pb::ListEvalsResponse list;
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ListEvals, pb::ListEvalsRequest(), &list)),
              Describe(e));
  }
  const auto calls = jobs_.calls();
  EXPECT_EQ(calls.submitted.size(), errors.size());
  EXPECT_EQ(calls.got, std::vector<std::string>(errors.size(), "ev-404"));
  EXPECT_EQ(calls.cancelled, std::vector<std::string>(errors.size(), "ev-404"));
  EXPECT_EQ(calls.resubmitted, std::vector<std::string>(errors.size(), "ev-404"));
  EXPECT_EQ(calls.listed.size(), errors.size());
}

TEST_F(JobRpcsTest, TheServiceRefusesBadRequestsBeforeTheJobService) {
  pb::EvalJob job;
  {
    pb::SubmitEvalRequest req;  // no request
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)),
              "INVALID_ARGUMENT: request is required");
  }
  {
    pb::SubmitEvalRequest req;
    req.mutable_request()->set_mode(static_cast<pb::EvalMode>(9));
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)),
              "INVALID_ARGUMENT: mode 9 is not anchor or replay");
  }
  {
    pb::SubmitEvalRequest req;
    req.mutable_request()->set_step(-1);
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)),
              "INVALID_ARGUMENT: step must be >= 0; got -1");
  }
  {
    pb::SubmitEvalRequest req;
    req.mutable_request()->set_gate_floor(-0.5);
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)),
              "INVALID_ARGUMENT: gate_floor must be >= 0 (the largest accepted fall of a slice's "
              "accept length); got -0.5");
  }
  {
    pb::SubmitEvalRequest req;
    (*req.mutable_request()->mutable_labels())["bad key"] = "v";
    EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)),
              "INVALID_ARGUMENT: labels key 'bad key' is not 1 to 63 letters, digits, '_', '-', "
              "'.', '/'");
  }
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, pb::GetEvalRequest(), &job)),
            "INVALID_ARGUMENT: id is empty");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::CancelEval, pb::CancelEvalRequest(), &job)),
            "INVALID_ARGUMENT: id is empty");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::ResubmitEval, pb::ResubmitEvalRequest(), &job)),
            "INVALID_ARGUMENT: id is empty");
  pb::GetEvalRequest control;
  control.set_id("ev-\n1");
  EXPECT_EQ(Describe(Call(&pb::DrafterEval::Stub::GetEval, control, &job)),
            "INVALID_ARGUMENT: id contains control character 0x0a at byte 3");

  const auto calls = jobs_.calls();
  EXPECT_THAT(calls.submitted, IsEmpty());
  EXPECT_THAT(calls.got, IsEmpty());
  EXPECT_THAT(calls.cancelled, IsEmpty());
  EXPECT_THAT(calls.resubmitted, IsEmpty());
}

TEST_F(JobRpcsTest, UnparsableRequestsAreInvalidArgumentAndNeverReachTheJobService) {
  const std::string prefix = "INVALID_ARGUMENT: request is not a valid dflash.eval.v1.";
  EXPECT_EQ(Describe(Raw("SubmitEval", Tag(1, 0) + Varint(1))),
            prefix +
                "SubmitEvalRequest: field 'request' (1) has wire type 0 (varint); expected 2 "
                "(length-delimited)");
  EXPECT_EQ(Describe(Raw("SubmitEval", LenField(1, LenField(6, "12")))),
            prefix +
                "SubmitEvalRequest: field 'request.max_samples' (6) has wire type 2 "
                "(length-delimited); expected 0 (varint)");
  EXPECT_EQ(Describe(Raw("GetEval", LenField(1, "ev-\xFF"))),
            prefix +
                "GetEvalRequest: field 'id' (1) is not valid UTF-8 (byte 0xff at offset 3 of "
                "the value)");
  EXPECT_EQ(Describe(Raw("CancelEval", Tag(1, 0) + Varint(7))),
            prefix +
                "CancelEvalRequest: field 'id' (1) has wire type 0 (varint); expected 2 "
                "(length-delimited)");
  EXPECT_EQ(Describe(Raw("ResubmitEval", Tag(1, 0) + Varint(7))),
            prefix +
                "ResubmitEvalRequest: field 'id' (1) has wire type 0 (varint); expected 2 "
                "(length-delimited)");
  EXPECT_EQ(Describe(Raw("ListEvals", Tag(5, 5) + "abcd")),
            prefix +
                "ListEvalsRequest: field 'min_step' (5) has wire type 5 (32-bit); expected 0 "
                "(varint)");
  const auto calls = jobs_.calls();
  EXPECT_THAT(calls.submitted, IsEmpty());
  EXPECT_THAT(calls.got, IsEmpty());
  EXPECT_THAT(calls.cancelled, IsEmpty());
  EXPECT_THAT(calls.resubmitted, IsEmpty());
  EXPECT_THAT(calls.listed, IsEmpty());
}

}  // namespace
}  // namespace dflash::service
