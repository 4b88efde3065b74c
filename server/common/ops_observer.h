// File: ops_observer.h
// Hooks through which the service and the job code report what operators
// monitor (metrics/ implements them with Prometheus). Nothing here knows
// about Prometheus or gRPC; with no observer installed every hook is a no-op.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash {

class OpsObserver {
 public:
  virtual ~OpsObserver() = default;
  // One finished RPC: its method ("RunEval"), status and wall time.
  virtual void OnRpc(absl::string_view method, absl::StatusCode code, double seconds) {}
  // The job table now: count by lower-case state ("queued", "running",
  // "succeeded", ...). Call on every transition; states absent count 0.
  virtual void OnJobStates(const std::map<std::string, int64_t>& counts) {}
  // A job reached a final state ("succeeded", "failed", "cancelled",
  // "interrupted") after `seconds` of running.
  virtual void OnJobFinished(absl::string_view state, double seconds) {}
};

// Installs the process-wide observer (nullptr removes it). The observer
// must outlive every thread that may report to it.
void SetOpsObserver(OpsObserver* observer);
// The installed observer, or a no-op one; never null.
OpsObserver& Ops();

}  // namespace dflash
