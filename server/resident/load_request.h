// File: load_request.h
// What a load (or a validation) asks of the registry, and what it answers:
// plain values, torch-free (core/eval_core.h passes them through).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "resident/resource.h"
#include "types/eval_types.h"
#include "weights/weight_report.h"

namespace dflash::resident {

struct ValidateParams {
  std::string path, config_path;
  bool allow_unexpected = false;
  bool compute_stats = false;
};

// dtype: "" (server default), "fp32", "bf16", "fp16". device: "" = default.
struct LoadDrafterParams {
  std::string name, path, config_path, dtype, device;
  bool allow_unexpected = false;
};

struct LoadTargetParams {
  std::string name, path, dtype, device;
  bool load_final_norm = false;
};

struct LoadDatasetParams {
  std::string name, path, dtype, device;
  std::map<std::string, std::vector<int>> layer_ids;
  int64_t max_samples = 0;
  bool skip_bad_samples = false;
  // A resident target: also compute the dataset's target consistency.
  std::string target;
  // Keep it on disk, read in chunks of at most stream_budget_bytes (0: the
  // default) by each evaluation (issue 30). A dataset over the resident
  // budget is streamed without asking.
  bool stream = false;
  int64_t stream_budget_bytes = 0;
  // Over the resident budget: ResourceExhausted rather than streamed (a
  // fleet's on-demand load first frees earlier on-demand loads).
  bool refuse_over_budget = false;
};

struct LoadResult {
  ResourceInfo resource;
  std::optional<weights::WeightReport> report;  // drafters
  bool reused = false;
  std::vector<std::string> warnings;
  std::vector<std::string> facts;
  // LoadDataset with a target: the pair's consistency (positions 0: none).
  types::TargetConsistency target_consistency;
  std::string consistency_target;
};

}  // namespace dflash::resident
