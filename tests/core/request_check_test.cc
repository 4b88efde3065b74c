// File: request_check_test.cc
// Each request rule of core/request_check.h with its exact code and words:
// RunEval, SubmitEval, ResubmitEval and the fleet's submit all answer with
// these, so a change of words shows here first.
#include "core/request_check.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

class RequestCheckTest : public ::testing::Test {
 protected:
  // A request that meets every rule: a resident drafter on a dataset.
  static types::EvalParams Good() {
    types::EvalParams p;
    p.drafter = "m";
    p.dataset = "d";
    return p;
  }
  static types::JobRequest GoodJob() {
    types::JobRequest r;
    r.params = Good();
    return r;
  }
};

TEST_F(RequestCheckTest, DrafterByNameOrCheckpointExactlyOnce) {
  EXPECT_THAT(CheckDrafterSource(Good()), IsOk());
  types::EvalParams ckpt = Good();
  ckpt.drafter.clear();
  ckpt.checkpoint_path = "/x";
  EXPECT_THAT(CheckDrafterSource(ckpt), IsOk());
  types::EvalParams none = Good();
  none.drafter.clear();
  EXPECT_THAT(CheckDrafterSource(none),
              StatusIs(kInvalid, Eq("give a resident drafter name or a checkpoint path")));
  types::EvalParams both = Good();
  both.checkpoint_path = "/x";
  EXPECT_THAT(
      CheckDrafterSource(both),
      StatusIs(kInvalid, Eq("give a resident drafter name or a checkpoint path, not both")));
}

TEST_F(RequestCheckTest, DatasetByNameOrFleetPath) {
  EXPECT_THAT(CheckDatasetNamed(Good(), false), IsOk());
  types::EvalParams none = Good();
  none.dataset.clear();
  EXPECT_THAT(CheckDatasetNamed(none, false), StatusIs(kInvalid, Eq("dataset is required")));
  EXPECT_THAT(CheckDatasetNamed(none, /*dataset_by_path=*/true), IsOk());
}

TEST_F(RequestCheckTest, SamplingNeedsAnchorModeAndMaxNewTokensReplay) {
  types::EvalOptions o;
  o.sampling = {{0.7, 1, 0}};
  EXPECT_THAT(CheckModeOptions(o), IsOk());
  o.mode = types::Mode::kReplay;
  EXPECT_THAT(
      CheckModeOptions(o),
      StatusIs(kInvalid,
               Eq("sampling settings need mode anchor (sampled acceptance is teacher-forced)")));
  o.sampling.clear();
  o.max_new_tokens = 64;
  EXPECT_THAT(CheckModeOptions(o), IsOk());
  o.mode = types::Mode::kAnchor;
  EXPECT_THAT(CheckModeOptions(o),
              StatusIs(kInvalid, Eq("max_new_tokens (64) needs mode replay (it cuts replay's "
                                    "walk; anchor mode scores fixed blocks)")));
}

TEST_F(RequestCheckTest, SamplingRangesArePolicyRules) {
  types::EvalOptions o;
  EXPECT_THAT(CheckSampling(o, std::nullopt), IsOk());
  o.sampling = {{-1, 1, 0}};
  EXPECT_THAT(CheckSampling(o, std::nullopt),
              StatusIs(kInvalid, Eq("sampling 't=-1': temperature must be >= 0 (0 = greedy)")));
  // The same words whether the drafter is known (resident) or not (a path).
  EXPECT_THAT(CheckSampling(o, false),
              StatusIs(kInvalid, Eq("sampling 't=-1': temperature must be >= 0 (0 = greedy)")));
  o.sampling = {{0.6, 1.5, 0}};
  EXPECT_THAT(CheckSampling(o, true),
              StatusIs(kInvalid, Eq("sampling 't=0.6,p=1.5': top_p must be in (0, 1] (1 = off)")));
  // Under a preset, its convention first: vllm's k=-1 is off, not an error.
  o.sampling = {{1.0, 0.95, -1}};
  o.engine = "vllm";
  EXPECT_THAT(CheckSampling(o, false), IsOk());
  // The selector policy needs DFlash 2: known only once the drafter is.
  o.engine.clear();
  o.sampling = {{0.7, 1, 0}};
  o.policies = {types::ProposalPolicy::kSelector};
  EXPECT_THAT(CheckSampling(o, std::nullopt), IsOk());
  EXPECT_THAT(CheckSampling(o, false),
              StatusIs(kInvalid, Eq("policy selector needs a DFlash 2 drafter (its candidate "
                                    "selector proposes); this drafter is DFlash 1: use sample, "
                                    "argmax or match")));
}

TEST_F(RequestCheckTest, EvalRequestReportsTheFirstBrokenRule) {
  EXPECT_THAT(CheckEvalRequest(Good()), IsOk());
  types::EvalParams p = Good();
  p.drafter.clear();
  p.dataset.clear();
  EXPECT_THAT(CheckEvalRequest(p),
              StatusIs(kInvalid, Eq("give a resident drafter name or a checkpoint path")));
  p = Good();
  p.dataset.clear();
  EXPECT_THAT(CheckEvalRequest(p), StatusIs(kInvalid, Eq("dataset is required")));
  RequestFacts by_path;
  by_path.dataset_by_path = true;
  EXPECT_THAT(CheckEvalRequest(p, by_path), IsOk());
  p = Good();
  p.options.mode = types::Mode::kReplay;
  p.options.sampling = {{-1, 1, 0}};  // the mode rule comes before the ranges
  EXPECT_THAT(
      CheckEvalRequest(p),
      StatusIs(kInvalid,
               Eq("sampling settings need mode anchor (sampled acceptance is teacher-forced)")));
  p.options.mode = types::Mode::kAnchor;
  EXPECT_THAT(CheckEvalRequest(p),
              StatusIs(kInvalid, Eq("sampling 't=-1': temperature must be >= 0 (0 = greedy)")));
}

TEST_F(RequestCheckTest, GateOptionsNeedAGateAndBestNeedsARun) {
  EXPECT_THAT(CheckGate({}, ""), IsOk());
  const std::string need_gate =
      "gate_metric, gate_min_delta, gate_allow_recipe_mismatch and gate_floor need gate";
  types::GateSpec stray;
  stray.min_delta = 1;
  EXPECT_THAT(CheckGate(stray, "run-a"), StatusIs(kInvalid, Eq(need_gate)));
  stray = {};
  stray.metric = "accept_length";
  EXPECT_THAT(CheckGate(stray, "run-a"), StatusIs(kInvalid, Eq(need_gate)));
  stray = {};
  stray.has_floor = true;
  EXPECT_THAT(CheckGate(stray, "run-a"), StatusIs(kInvalid, Eq(need_gate)));
  stray = {};
  stray.allow_recipe_mismatch = true;
  EXPECT_THAT(CheckGate(stray, "run-a"), StatusIs(kInvalid, Eq(need_gate)));

  for (const char* reference : {"best", "previous"}) {
    types::GateSpec gate;
    gate.reference = reference;
    EXPECT_THAT(CheckGate(gate, "run-a"), IsOk());
    EXPECT_THAT(CheckGate(gate, ""),
                StatusIs(kInvalid, Eq(absl::StrCat("gate '", reference,
                                                   "' looks for the reference among the run's "
                                                   "jobs; give run"))));
  }
  types::GateSpec by_id;
  by_id.reference = "ev-1";
  EXPECT_THAT(CheckGate(by_id, ""), IsOk());  // a job id needs no run
  by_id.metric = "tua";
  EXPECT_THAT(CheckGate(by_id, ""),
              StatusIs(kInvalid, Eq("metric 'tua' is not accept_length, tau, accuracy[j], "
                                    "acceptance[j] or conditional[j] with j in 1..1048576")));
}

TEST_F(RequestCheckTest, JobRequestChecksParamsThenGate) {
  EXPECT_THAT(CheckJobRequest(GoodJob(), std::nullopt), IsOk());
  types::JobRequest fleet = GoodJob();
  fleet.params.dataset.clear();
  EXPECT_THAT(CheckJobRequest(fleet, std::nullopt), StatusIs(kInvalid, Eq("dataset is required")));
  fleet.dataset_path = "/srv/datasets/gsm8k";
  EXPECT_THAT(CheckJobRequest(fleet, std::nullopt), IsOk());
  types::JobRequest gated = GoodJob();
  gated.gate.reference = "best";
  EXPECT_THAT(
      CheckJobRequest(gated, std::nullopt),
      StatusIs(kInvalid, Eq("gate 'best' looks for the reference among the run's jobs; give run")));
  types::JobRequest selector = GoodJob();
  selector.params.options.sampling = {{0.7, 1, 0}};
  selector.params.options.policies = {types::ProposalPolicy::kSelector};
  EXPECT_THAT(CheckJobRequest(selector, true), IsOk());
  EXPECT_THAT(CheckJobRequest(selector, false).code(), Eq(kInvalid));
}

}  // namespace
}  // namespace dflash::core
