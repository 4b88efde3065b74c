// File: placement.h
// Where an evaluation's parts run: the device slots and the server's threads.
// Its own file so the evaluator and the runners it calls (parts_run,
// part_ranges) share it without including each other.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/drafter_model.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

// Where an evaluation may run (issue 30): device slots, each with the
// drafter and target it uses there (the same objects for CPU slots), and
// the server's intra-op threads, shared out among the slots that run at
// once.
struct DeviceSlot {
  const model::DrafterModel* drafter = nullptr;
  const weights::TargetTensors* target = nullptr;
  std::string name;  // "cpu", "cpu#1", "cuda:1": shown in each shard's placement
};
struct Placement {
  std::vector<DeviceSlot> slots;
  int threads = 0;  // the server's intra-op threads; 0: left as they are
  // Sets the process's intra-op (and BLAS) threads (resident/device.h).
  std::function<void(int)> set_threads;
  std::string server;  // names the server in each shard's placement
  // The caller ran CheckCompatible on the first slot's objects already (the
  // core does, before anything costly): it is not run twice.
  bool compatibility_checked = false;
};

}  // namespace dflash::eval
