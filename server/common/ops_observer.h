// File: ops_observer.h
// Hooks through which the service, the job queue and the core report what
// operators monitor (metrics/ implements them with Prometheus). Nothing here
// knows about Prometheus or gRPC; with no observer installed every hook is a
// no-op.
//
// This is the server's one metrics mechanism. A decorator around the core
// (an EvalCore that times the calls it forwards) would see loads and
// evaluations only; the job queue's state changes and each RPC's outcome
// happen where no decorator sits, so everything reports here instead.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash {

// What a successful evaluation scored (types::EvalResult's counts; common/
// sits below eval/).
struct EvalCounts {
  int64_t blocks = 0;
  int64_t tokens_scored = 0;   // draft positions compared
  double compute_seconds = 0;  // evaluation compute, setup excluded
};

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
  // A load of a "target", "drafter" or "dataset" that ended with `code`
  // after `seconds`. A load answered by the object already resident is no
  // load and is not reported.
  virtual void OnLoad(absl::string_view kind, absl::StatusCode code, double seconds) {}
  // An evaluation that ended with `code` after `seconds` (setup and compute);
  // `counts` is null unless it succeeded.
  virtual void OnEval(absl::StatusCode code, double seconds, const EvalCounts* counts) {}
};

// Installs the process-wide observer (nullptr removes it). The observer
// must outlive every thread that may report to it.
void SetOpsObserver(OpsObserver* observer);
// The installed observer, or a no-op one; never null.
OpsObserver& Ops();

}  // namespace dflash
