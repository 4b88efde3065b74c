// service/job_convert: job requests to the proto and back (defaults
// normalised), the job's own fields (run, step, labels, gate), listings,
// CompareEvals' ids and options, each shape check with its message.
#include "service/job_convert.h"

#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "full_eval_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::StatusIs;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

class JobConvertTest : public ::testing::Test {};

TEST_F(JobConvertTest, JobRequestRoundTrip) {
  const pb::EvalRequest in = FullEvalRequest();
  ASSERT_OK_AND_ASSIGN(auto job, JobRequestFromProto(in));
  pb::EvalRequest out;
  ToProto(job, &out);
  EXPECT_TRUE(MessageDifferencer::Equals(in, out)) << out.DebugString();
}

TEST_F(JobConvertTest, RoundTripNormalisesDefaults) {
  pb::EvalRequest in;
  in.set_dataset("d");
  in.set_checkpoint_path("/srv/models/step-5000");
  ASSERT_OK_AND_ASSIGN(auto job, JobRequestFromProto(in));
  pb::EvalRequest out;
  ToProto(job, &out);
  // What an empty field meant is written out.
  pb::EvalRequest want = in;
  want.set_mode(pb::EVAL_MODE_ANCHOR);
  want.set_anchors(pb::ANCHOR_STRATEGY_EVEN);
  want.set_semantics("zlab-current");
  EXPECT_TRUE(MessageDifferencer::Equals(want, out)) << out.DebugString();
  // And a second trip changes nothing.
  ASSERT_OK_AND_ASSIGN(auto again, JobRequestFromProto(out));
  pb::EvalRequest out2;
  ToProto(again, &out2);
  EXPECT_TRUE(MessageDifferencer::Equals(out, out2));
}

TEST_F(JobConvertTest, JobRequestShapeErrors) {
  auto with = [](auto edit) {
    pb::EvalRequest r = FullEvalRequest();
    edit(r);
    return r;
  };
  EXPECT_THAT(JobRequestFromProto(with([](pb::EvalRequest& r) { r.set_step(-1); })),
              StatusIs(kInvalid, Eq("step must be >= 0; got -1")));
  EXPECT_THAT(JobRequestFromProto(with([](pb::EvalRequest& r) { r.set_run("r\x7f"); })),
              StatusIs(kInvalid, Eq("run contains control character 0x7f at byte 1")));
  EXPECT_THAT(JobRequestFromProto(
                  with([](pb::EvalRequest& r) { (*r.mutable_labels())["bad key!"] = "v"; })),
              StatusIs(kInvalid, Eq("labels key 'bad key!' is not 1 to 63 letters, digits, "
                                    "'_', '-', '.', '/'")));
  EXPECT_THAT(
      JobRequestFromProto(with([](pb::EvalRequest& r) { (*r.mutable_labels())["lr"] = "a\tb"; })),
      StatusIs(kInvalid, Eq("labels['lr'] contains control character 0x09 at byte 1")));
}

TEST_F(JobConvertTest, GateFieldsAndTheirRanges) {
  pb::EvalRequest r = FullEvalRequest();
  r.set_gate("ev-base");
  r.set_gate_metric("tau");
  r.set_gate_min_delta(0.05);
  r.set_gate_floor(0.0);
  ASSERT_OK_AND_ASSIGN(types::JobRequest j, JobRequestFromProto(r));
  EXPECT_EQ(j.gate.reference, "ev-base");
  EXPECT_EQ(j.gate.metric, "tau");
  EXPECT_DOUBLE_EQ(j.gate.min_delta, 0.05);
  EXPECT_TRUE(j.gate.has_floor);  // 0 set is a floor, not its absence
  r.set_gate_min_delta(-0.5);
  EXPECT_THAT(JobRequestFromProto(r),
              StatusIs(kInvalid, Eq("gate_min_delta must be >= 0; got -0.5")));
  r.set_gate_min_delta(0);
  r.set_gate_floor(-1);
  EXPECT_THAT(JobRequestFromProto(r),
              StatusIs(kInvalid, Eq("gate_floor must be >= 0 (the largest accepted fall of a "
                                    "slice's accept length); got -1")));
  r.clear_gate_floor();
  r.set_gate("g\x01");
  EXPECT_THAT(JobRequestFromProto(r),
              StatusIs(kInvalid, Eq("gate contains control character 0x01 at byte 1")));
}

TEST_F(JobConvertTest, ListQueryFromTheWire) {
  pb::ListEvalsRequest in;
  in.set_state(pb::JOB_STATE_SUCCEEDED);
  in.set_run("run-a");
  in.set_min_step(100);
  in.set_page_size(50);
  (*in.mutable_labels())["lr"] = "3e-4";
  ASSERT_OK_AND_ASSIGN(types::ListQuery q, FromProto(in));
  EXPECT_EQ(q.state, types::JobState::kSucceeded);
  EXPECT_EQ(q.run, "run-a");
  EXPECT_EQ(q.min_step, 100);
  EXPECT_FALSE(q.max_step.has_value());  // 0: no bound
  EXPECT_EQ(q.page_size, 50);
  EXPECT_EQ(q.labels.at("lr"), "3e-4");
  ASSERT_OK_AND_ASSIGN(q, FromProto(pb::ListEvalsRequest()));
  EXPECT_FALSE(q.state.has_value());
}

TEST_F(JobConvertTest, ListQueryShapeErrors) {
  const auto bad = [](auto edit, const std::string& msg) {
    pb::ListEvalsRequest r;
    edit(r);
    EXPECT_THAT(FromProto(r), StatusIs(kInvalid, Eq(msg)));
  };
  bad([](pb::ListEvalsRequest& r) { r.set_state(static_cast<pb::JobState>(42)); },
      "state 42 is not a job state");
  bad([](pb::ListEvalsRequest& r) { r.set_page_size(-1); }, "page_size must be >= 0; got -1");
  bad([](pb::ListEvalsRequest& r) { r.set_page_size(1001); },
      "page_size must be <= 1000; got 1001");
  bad([](pb::ListEvalsRequest& r) { r.set_page_token("t\n"); },
      "page_token contains control character 0x0a at byte 1");
  bad([](pb::ListEvalsRequest& r) { r.set_max_step(-2); }, "max_step must be >= 0; got -2");
  bad(
      [](pb::ListEvalsRequest& r) {
        r.set_min_step(5000);
        r.set_max_step(1000);
      },
      "min_step 5000 is greater than max_step 1000");
  bad([](pb::ListEvalsRequest& r) { r.set_suite(std::string(257, 's')); },
      "suite is 257 bytes long; at most 256 are allowed");
}

TEST_F(JobConvertTest, CompareIdsAndOptions) {
  pb::CompareEvalsRequest in;
  in.add_ids("ev-a");
  in.add_ids("ev-b");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, JobIdsFromProto(in));
  EXPECT_THAT(ids, ::testing::ElementsAre("ev-a", "ev-b"));
  in.add_ids("ev-a");
  EXPECT_THAT(JobIdsFromProto(in), StatusIs(kInvalid, Eq("ids[2] repeats ids[0] ('ev-a')")));
  pb::CompareEvalsRequest empty_id;
  empty_id.add_ids("");
  EXPECT_THAT(JobIdsFromProto(empty_id), StatusIs(kInvalid, Eq("ids[0] is empty")));
  pb::CompareEvalsRequest many;
  for (int i = 0; i < 101; ++i) many.add_ids("ev-" + std::to_string(i));
  EXPECT_THAT(JobIdsFromProto(many),
              StatusIs(kInvalid, Eq("compare takes at most 100 job ids; got 101")));
  in.set_ci_resamples(0);
  in.set_ci_seed(9);
  in.set_require_paired(true);
  ASSERT_OK_AND_ASSIGN(core::CompareOptions o, CompareOptionsFromProto(in));
  EXPECT_TRUE(o.require_paired);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.resamples, core::CompareOptions().resamples);  // 0: the default
  in.set_ci_resamples(100001);
  EXPECT_THAT(CompareOptionsFromProto(in),
              StatusIs(kInvalid, Eq("ci_resamples must be <= 100000; got 100001")));
  in.set_ci_resamples(-3);
  EXPECT_THAT(CompareOptionsFromProto(in),
              StatusIs(kInvalid, Eq("ci_resamples must be >= 0; got -3")));
}

TEST_F(JobConvertTest, JobStatesMapOneToOne) {
  EXPECT_EQ(JobStateToProto(types::JobState::kQueued), pb::JOB_STATE_QUEUED);
  EXPECT_EQ(JobStateToProto(types::JobState::kRunning), pb::JOB_STATE_RUNNING);
  EXPECT_EQ(JobStateToProto(types::JobState::kSucceeded), pb::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(JobStateToProto(types::JobState::kFailed), pb::JOB_STATE_FAILED);
  EXPECT_EQ(JobStateToProto(types::JobState::kCancelled), pb::JOB_STATE_CANCELLED);
  EXPECT_EQ(JobStateToProto(types::JobState::kInterrupted), pb::JOB_STATE_INTERRUPTED);
}

}  // namespace
}  // namespace dflash::service
