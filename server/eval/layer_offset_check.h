// File: layer_offset_check.h
// Issue 18 item 5: when the dataset also holds the drafter's layers shifted
// by one (both numberings fit), a small sample (4 samples, 8 even anchors
// each) is scored under both readings and a warning gives the first-position
// accuracy of each. Nothing is switched: the evaluation reads the declared ids.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "model/drafter_model.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

// One warning per shift (-1, +1) whose layers the dataset holds; none
// when it holds neither.
absl::StatusOr<std::vector<std::string>> LayerOffsetWarnings(const model::DrafterModel& drafter,
                                                             const weights::TargetTensors& target,
                                                             const data::EvalDataset& dataset,
                                                             const types::EvalOptions& options);

}  // namespace dflash::eval
