// File: resident_set.h
// The resident objects a Registry (registry.h) holds and the lock that
// guards them. Entries hold shared_ptrs so an evaluation keeps what it uses
// alive, and Unload can tell (use_count) that something is still in use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "data/eval_dataset.h"
#include "model/drafter_model.h"
#include "resident/resource.h"
#include "types/eval_types.h"
#include "weights/map_policy.h"
#include "weights/target_tensors.h"
#include "weights/weight_report.h"

namespace dflash::resident {

struct ResidentSet {
  struct Target {
    ResourceInfo info;
    std::shared_ptr<const weights::TargetTensors> tensors;
  };
  struct Drafter {
    ResourceInfo info;
    std::shared_ptr<const model::DrafterModel> model;
    weights::WeightReport report;
    std::string disk_signature;                        // path, dtype, device, file sizes and mtimes
    std::shared_ptr<const weights::MapTally> mapping;  // views of its files
  };
  struct Dataset {
    ResourceInfo info;
    std::shared_ptr<const data::EvalDataset> dataset;
    // Target consistency per target fingerprint, computed once (under mu).
    std::map<std::string, types::TargetConsistency> consistency;
  };

  mutable std::mutex mu;  // guards the maps
  std::map<std::string, Target> targets;
  std::map<std::string, Drafter> drafters;
  std::map<std::string, Dataset> datasets;
  // Serialises loads, so two never race for the same device memory.
  std::mutex load_mu;
};

}  // namespace dflash::resident
