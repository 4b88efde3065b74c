// File: types/eval_params.h
// What one evaluation asks for, by name: the drafter (resident, or a
// checkpoint loaded for this evaluation), the dataset and target, and the
// options. A job's request holds one (types/job_types.h); the core runs one.
#pragma once

#include <string>

#include "types/eval_types.h"

namespace dflash::types {

struct EvalParams {
  std::string drafter;          // resident drafter, or
  std::string checkpoint_path;  // a checkpoint to load for this evaluation
  std::string dataset, target;
  EvalOptions options;
};

}  // namespace dflash::types
