// File: sampled_alphas.h
// block_scorer's hook for sampled acceptance: gathers, for every drafted slot
// j of each block at anchor a, the captured final hidden state at position
// a + j - 1 (the target's prediction of t[a + j]) and the teacher-forced
// predecessor t[a + j - 1], and stores each slot's alphas in its BlockScore.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "eval/block_request.h"
#include "eval/slot_scoring.h"
#include "model/drafter_model.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

// h [nb * (B - 1), H]: the blocks' drafted slots, as block_scorer projects
// them. Blocks without a final hidden state get no alphas. Throws c10::Error.
void AddSampledAlphas(const std::vector<BlockRequest>& blocks, const at::Tensor& h,
                      const model::DrafterModel& drafter, const weights::TargetTensors& target,
                      const std::vector<types::SamplingSetting>& settings, bool norm_applied,
                      std::vector<BlockScore>& scores);

}  // namespace dflash::eval
