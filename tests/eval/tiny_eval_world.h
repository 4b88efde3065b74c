// File: tiny_eval_world.h
// The in-memory tiny world the evaluator and block scorer tests share, loaded
// the way the server loads it: tokens designed to accept 1 or 3 drafts in
// turn (reference_walk.h), the dataset written to disk and read back by the
// real loader, the drafter bound from its config and weights, the target's
// tensors, and the independent reference drafts.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/reference_walk.h"
#include "model/drafter_model.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"
#include "weights/target_tensors.h"

namespace dflash::eval::testing {

struct TinyEvalWorld {
  std::unique_ptr<dflash::testing::TinyWorld> world;
  std::unique_ptr<dflash::testing::TempDir> dir;
  std::unique_ptr<data::EvalDataset> dataset;
  std::unique_ptr<model::DrafterModel> drafter;
  std::unique_ptr<weights::TargetTensors> target;
  std::unique_ptr<ReferenceDrafts> ref;  // reads *world: declared after it
};

absl::StatusOr<std::unique_ptr<TinyEvalWorld>> LoadTinyEvalWorld(int64_t block_size);

}  // namespace dflash::eval::testing
