// The job RPCs (SubmitEval .. CalibrateEval, WatchEval, and unloads with a
// job service) over a fake job service, on a real loopback server with a real
// stub: proto <-> job translation, status codes and messages passed through
// unchanged, the service's own checks, and the WatchEval stream.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "fakes/fake_eval_core.h"
#include "fakes/fake_job_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/resource.h"
#include "service/eval_service.h"
#include "service/job_convert.h"
#include "test_util/loopback_server.h"
#include "test_util/wire_bytes.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::LenField;
using ::dflash::testing::Tag;
using ::dflash::testing::Varint;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr auto kWait = std::chrono::seconds(10);
constexpr int64_t kCreateMicros = 1'700'000'000'123'456;

// "CODE: message", so one comparison checks both and a failure shows both.
std::string Describe(const grpc::Status& st) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(st.error_code())) + ": " +
         st.error_message();
}
std::string Describe(const absl::Status& st) {
  return absl::StatusCodeToString(st.code()) + ": " + std::string(st.message());
}

types::JobRecord Record(const std::string& id, types::JobState state, int64_t blocks_done = 0) {
  types::JobRecord r;
  r.id = id;
  r.state = state;
  r.request.params.drafter = "step-4000";
  r.request.params.dataset = "mt-bench";
  r.request.run = "run-a";
  r.request.step = 4000;
  r.progress.blocks_done = blocks_done;
  r.progress.blocks_total = 10;
  r.create_unix_micros = kCreateMicros;
  r.server_version = "9.9.9";
  return r;
}

class JobRpcsTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void TearDown() override { Stop(); }

  void Start(ServiceOptions options) {
    Stop();
    service_ = std::make_unique<EvalService>(core_, &jobs_, 2, options);
    server_ = std::make_unique<testing::LoopbackServer>(service_.get());
    ASSERT_TRUE(server_->ok());
  }
  void Stop() {
    server_.reset();
    service_.reset();
  }

  // One unary call with a fresh context and a deadline.
  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (pb::DrafterEval::Stub::*method)(grpc::ClientContext*, const Req&,
                                                                  Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kWait);
    return (server_->stub().*method)(&ctx, req, resp);
  }
  grpc::Status Raw(const std::string& method, const std::string& bytes) {
    return server_->CallRaw("/dflash.eval.v1.DrafterEval/" + method, bytes);
  }

  // A WatchEval stream: its context (with a deadline) and its reader.
  struct Watch {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<pb::EvalJob>> reader;
  };
  std::unique_ptr<Watch> OpenWatch(const std::string& id) {
    auto w = std::make_unique<Watch>();
    w->ctx.set_deadline(std::chrono::system_clock::now() + kWait);
    pb::WatchEvalRequest req;
    req.set_id(id);
    w->reader = server_->stub().WatchEval(&w->ctx, req);
    return w;
  }
  // The handle of the watch the server started last (after its first
  // message was read, Watch has returned).
  int64_t LastHandle() {
    std::vector<int64_t> handles = jobs_.WaitForWatches(1, kWait);
    return handles.empty() ? -1 : handles.back();
  }

  testing::FakeEvalCore core_;
  testing::FakeJobService jobs_;
  std::unique_ptr<EvalService> service_;
  std::unique_ptr<testing::LoopbackServer> server_;
};

TEST_F(JobRpcsTest, SubmitEvalTranslatesTheRequestToAJobRequest) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kQueued); });
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
  pb::EvalJob job;
  ASSERT_EQ(Describe(Call(&pb::DrafterEval::Stub::SubmitEval, req, &job)), "OK: ");

  const std::vector<types::JobRequest> submitted = jobs_.calls().submitted;
  ASSERT_EQ(submitted.size(), 1u);
  const types::JobRequest& got = submitted[0];
  EXPECT_EQ(got.params.drafter, "step-4000");
  EXPECT_EQ(got.params.checkpoint_path, "/ckpt/step-4000");
  EXPECT_EQ(got.params.dataset, "mt-bench");
  EXPECT_EQ(got.params.target, "qwen3-8b");
  const types::EvalOptions& o = got.params.options;
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

TEST_F(JobRpcsTest, WatchEvalSendsTheCurrentStateThenEachChangeAndEndsAfterTheFinalOne) {
  for (types::JobState final_state : {types::JobState::kSucceeded, types::JobState::kFailed,
                                      types::JobState::kCancelled, types::JobState::kInterrupted}) {
    SCOPED_TRACE(types::JobStateName(final_state));
    const size_t watches_before = jobs_.calls().watched.size();
    jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kQueued); });
    auto watch = OpenWatch("ev-1");
    pb::EvalJob job;
    ASSERT_TRUE(watch->reader->Read(&job));
    EXPECT_EQ(job.id(), "ev-1");
    EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
    std::vector<int64_t> handles = jobs_.WaitForWatches(watches_before + 1, kWait);
    ASSERT_EQ(handles.size(), watches_before + 1);
    const int64_t handle = handles.back();
    ASSERT_NE(handle, 0);
    EXPECT_EQ(jobs_.calls().watched.back(), "ev-1");

    // One change at a time: the stream keeps only the newest while a write
    // is in flight, so each is read before the next is pushed.
    for (int64_t blocks : {1, 5, 9}) {
      ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning, blocks)));
      ASSERT_TRUE(watch->reader->Read(&job));
      EXPECT_EQ(job.state(), pb::JOB_STATE_RUNNING);
      EXPECT_EQ(job.progress().blocks_done(), blocks);
    }
    types::JobRecord last = Record("ev-1", final_state, 10);
    last.error_message = "the last state";
    ASSERT_TRUE(jobs_.Push(handle, last));
    ASSERT_TRUE(watch->reader->Read(&job));
    EXPECT_EQ(job.state(), JobStateToProto(final_state));
    EXPECT_EQ(job.progress().blocks_done(), 10);
    EXPECT_EQ(job.error_message(), "the last state");
    EXPECT_FALSE(watch->reader->Read(&job));  // nothing after the final state
    EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
    // The stream ended: the service lets go of the subscription.
    EXPECT_TRUE(jobs_.WaitForUnwatch(handle, kWait));
    EXPECT_FALSE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning)));
  }
}

TEST_F(JobRpcsTest, WatchEvalOfAFinishedJobSendsItOnceAndEnds) {
  types::JobRecord rec = Record("ev-1", types::JobState::kSucceeded, 10);
  rec.result.emplace();
  rec.result->accept_length_pooled = 4.0;
  jobs_.Answer([&](auto& a) { a.record = rec; });
  auto watch = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(job.result().accept_length_pooled(), 4.0);
  EXPECT_FALSE(watch->reader->Read(&job));
  EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
  EXPECT_THAT(jobs_.WaitForWatches(1, kWait), ElementsAre(0));
  EXPECT_THAT(jobs_.calls().unwatched, IsEmpty());  // handle 0: nothing to let go of
}

TEST_F(JobRpcsTest, WatchEvalUnwatchesWhenTheClientCancels) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kRunning, 2); });
  auto watch = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.progress().blocks_done(), 2);
  const int64_t handle = LastHandle();
  ASSERT_GT(handle, 0);
  ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning, 3)));
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.progress().blocks_done(), 3);

  watch->ctx.TryCancel();
  while (watch->reader->Read(&job)) {
  }
  EXPECT_EQ(watch->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(jobs_.WaitForUnwatch(handle, kWait));
  // After Unwatch no change reaches the stream.
  EXPECT_FALSE(jobs_.Push(handle, Record("ev-1", types::JobState::kSucceeded)));
  for (int64_t h : jobs_.calls().unwatched) EXPECT_EQ(h, handle);
}

TEST_F(JobRpcsTest, WatchEvalErrorsEndTheStreamWithTheirStatus) {
  {
    auto watch = OpenWatch("");
    pb::EvalJob job;
    EXPECT_FALSE(watch->reader->Read(&job));
    EXPECT_EQ(Describe(watch->reader->Finish()), "INVALID_ARGUMENT: id is empty");
  }
  EXPECT_THAT(jobs_.calls().watched, IsEmpty());
  {
    jobs_.Answer([](auto& a) { a.error = absl::NotFoundError("no job 'ev-404'"); });
    auto watch = OpenWatch("ev-404");
    pb::EvalJob job;
    EXPECT_FALSE(watch->reader->Read(&job));
    EXPECT_EQ(Describe(watch->reader->Finish()), "NOT_FOUND: no job 'ev-404'");
  }
  EXPECT_THAT(jobs_.calls().watched, ElementsAre("ev-404"));
  EXPECT_THAT(jobs_.calls().unwatched, IsEmpty());
}

TEST_F(JobRpcsTest, WatchStreamsPastTheLimitAreResourceExhausted) {
  ServiceOptions options;
  options.max_watch_streams = 1;
  Start(options);
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kRunning); });
  auto first = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(first->reader->Read(&job));
  const int64_t handle = LastHandle();
  ASSERT_GT(handle, 0);

  auto second = OpenWatch("ev-1");
  EXPECT_FALSE(second->reader->Read(&job));
  EXPECT_EQ(Describe(second->reader->Finish()),
            "RESOURCE_EXHAUSTED: too many WatchEval streams open (1); the server allows 1 "
            "(--max-concurrent-streams); poll with GetEval instead");
  EXPECT_THAT(jobs_.calls().watched, ElementsAre("ev-1"));  // refused before Watch

  // The limit counts open streams: once the first ends, another may open
  // (the server lets go of a stream just after its client sees the end).
  ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kSucceeded)));
  ASSERT_TRUE(first->reader->Read(&job));
  EXPECT_FALSE(first->reader->Read(&job));
  EXPECT_EQ(Describe(first->reader->Finish()), "OK: ");
  jobs_.Answer([](auto& a) { a.record = Record("ev-2", types::JobState::kSucceeded); });
  std::string last_status;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto third = OpenWatch("ev-2");
    if (third->reader->Read(&job)) {
      EXPECT_EQ(job.id(), "ev-2");
      EXPECT_FALSE(third->reader->Read(&job));
      last_status = Describe(third->reader->Finish());
      break;
    }
    last_status = Describe(third->reader->Finish());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(last_status, "OK: ");
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
