// File: evaluator_fixture.h
// The suite the Evaluate() tests share (evaluator_walk_test.cc,
// evaluator_runs_test.cc): the tiny eval world (tiny_eval_world.h) loaded
// once, Evaluate() on it, and every metric of a result checked against the
// counts the reference walk expects.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/evaluator.h"
#include "eval/reference_walk.h"
#include "eval/tiny_eval_world.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/tiny_world.h"
#include "weights/target_tensors.h"

namespace dflash::eval::testing {

class EvaluatorTest : public ::testing::Test {
 protected:
  static constexpr int64_t kB = 4;  // the block size

  static void SetUpTestSuite();
  static void TearDownTestSuite();

  static absl::StatusOr<types::EvalResult> Run(const types::EvalOptions& o,
                                               const types::ProgressFn& p = nullptr);

  // `mode` under `s` with every anchor.
  static types::EvalOptions Options(types::Mode mode, types::Semantics s);

  // Every count of `got` equals the expectation's, computed here from the
  // expected blocks without the server's accumulator.
  static void ExpectMetrics(const types::EvalResult& got, const Expected& want, bool anchor);

  static dflash::testing::TinyWorld* world_;
  static TinyEvalWorld* all_;  // owns what the pointers below show
  static data::EvalDataset* dataset_;
  static model::DrafterModel* drafter_;
  static weights::TargetTensors* target_;
  static ReferenceDrafts* ref_;
};

}  // namespace dflash::eval::testing
