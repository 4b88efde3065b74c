// File: calibration.h
// An engine's served acceptance against the job that predicted it: one ratio
// under the engine's own weighting, per position where the engine counts
// positions, a verdict and, when off, what most likely explains it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "served/acceptance_curve.h"
#include "served/served_counters.h"

namespace dflash::served {

struct PositionCheck {
  int position = 0;                                                 // j, 1-based draft position
  double served_marginal = 0, predicted_marginal = 0;               // P(accept length >= j + 1)
  std::optional<double> served_conditional, predicted_conditional;  // unset = unavailable
  std::optional<double> ratio;  // served / predicted marginal; unset when predicted is 0
};

struct Calibration {
  std::string source;       // "vllm", "sglang", "zlab"
  std::string curve_label;  // which numbers of the job were compared
  std::string weighting;    // "step" or "request"
  double served_accept_length = 0, predicted_accept_length = 0;
  double ratio = 0;  // served / predicted
  std::optional<Range> predicted_interval;
  std::string verdict;  // "within" or "off"
  std::vector<std::string> likely_causes;
  std::vector<PositionCheck> positions;
  std::string text;     // the report, as the CLI prints it
  std::string created;  // RFC 3339, set by whoever stores it
};

// "Within" when the ratio is within 2% of 1 or the served figure lies in the
// job's 95% interval. InvalidArgument when the engine verified a different
// number of draft tokens per step than the job's block size implies.
absl::StatusOr<Calibration> Calibrate(const AcceptanceCurve& curve, const ServedCounters& served);

nlohmann::json CalibrationToJson(const Calibration& c);
absl::StatusOr<Calibration> CalibrationFromJson(const nlohmann::json& j);

}  // namespace dflash::served
