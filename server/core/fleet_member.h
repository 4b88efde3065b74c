// File: fleet_member.h
// One live server of a fleet as `info` and `ListResources --fleet` show it:
// what each server writes into the shared store's servers table at every
// heartbeat (as JSON), read back by any server.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "store/result_store.h"

namespace dflash::core {

struct FleetMember {
  std::string name;  // its fleet name: the address clients reach it at
  std::string device, device_description;
  int64_t total_memory_bytes = 0, used_memory_bytes = 0;
  std::vector<std::string> targets, datasets, drafters;  // resident names
  std::vector<std::string> running_jobs;
  double heartbeat_age_seconds = 0;
};

// This server's heartbeat text: its device and memory, resident objects and
// the jobs it runs.
std::string FleetInfoJson(const EvalCore& core, const std::vector<std::string>& running_jobs);
// InvalidArgument when `info_json` is not what FleetInfoJson wrote.
absl::StatusOr<FleetMember> ParseFleetMember(const std::string& name, const std::string& info_json,
                                             int64_t heartbeat_age_micros);
// ParseFleetMember of each server the servers table lists.
absl::StatusOr<std::vector<FleetMember>> ParseFleetMembers(
    const std::vector<store::FleetServer>& servers);

}  // namespace dflash::core
