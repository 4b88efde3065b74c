// File: compare_stats.h
// Paired differences between finished jobs and the regression gate built on
// them (docs/decision-metrics-stats.md): each metric of a job against a
// reference job, over the samples both scored, with a paired-bootstrap 95%
// interval. Plain C++ (no gRPC); JobServiceImpl calls these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "types/job_types.h"

namespace dflash::core {

// One metric of jobs[job_index] against jobs[0].
struct MetricDifference {
  std::string metric;
  int job_index = 0;
  double reference_value = 0, value = 0, delta = 0;  // delta = value - reference_value
  std::optional<types::Interval> delta_ci;
  bool excludes_zero = false;
  std::string verdict;  // "better", "worse", "no detectable difference" or "undefined"
};

// Every metric (accept length, tau, the per-position rates on the positions
// all jobs have) of jobs[1..] against jobs[0]. FailedPrecondition, naming the
// pair and why, when the samples cannot be paired.
absl::StatusOr<std::vector<MetricDifference>> PairedDifferences(
    const std::vector<types::JobRecord>& jobs, int64_t resamples, uint64_t seed);

// A slice present in two results and how its accept length moved.
struct SliceDrop {
  std::string slice;  // "kind=value"
  double value = 0, reference_value = 0, delta = 0;
};
// The slice (by kind and value) whose accept length fell most from `ref` to
// `result`; nullopt when no slice is in both.
std::optional<SliceDrop> WorstSlice(const types::EvalResult& result, const types::EvalResult& ref);

// The gate's verdict for `job` (just finished with `result`) against the
// reference `found` (nullopt: none found, `why_none` says why; an error: the
// verdict is "error" with the status in its text). With a slice floor the
// verdict is also "worse" when the worst slice fell by more than the floor.
types::GateVerdict GateVerdictFor(const types::JobRecord& job, const types::EvalResult& result,
                                  const absl::StatusOr<std::optional<types::JobRecord>>& found,
                                  const std::string& why_none);

}  // namespace dflash::core
