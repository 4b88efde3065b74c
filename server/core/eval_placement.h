// File: eval_placement.h
// The device slots one evaluation's shards run on (issue 30): one per
// --device entry. A CPU slot uses the resident objects themselves; a slot on
// another device gets replicas of the drafter and target, made for this
// evaluation and dropped with it (the dataset's shard is copied there by
// the evaluator).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "eval/evaluator.h"
#include "model/drafter_model.h"
#include "weights/target_tensors.h"

namespace dflash::core {

struct EvalSlots {
  eval::Placement placement;
  // Keep the replicas (and the resident objects) alive while it runs.
  std::vector<std::shared_ptr<const model::DrafterModel>> drafters;
  std::vector<std::shared_ptr<const weights::TargetTensors>> targets;
};

// `devices` empty: the objects' own device alone. Errors: a failed copy
// (ResourceExhausted when the device is out of memory), named by device.
absl::StatusOr<EvalSlots> MakeEvalSlots(const std::vector<std::string>& devices,
                                        const std::shared_ptr<const model::DrafterModel>& drafter,
                                        const std::shared_ptr<const weights::TargetTensors>& target,
                                        int threads, const std::string& server);

// Each --device entry's slot name: "cpu#0", "cpu#1" when the list holds
// several cpu entries, else the device itself.
std::vector<std::string> SlotNames(const std::vector<std::string>& devices);

// "host:pid": names this server in each shard's placement.
std::string ThisServer();

}  // namespace dflash::core
