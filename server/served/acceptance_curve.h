// File: acceptance_curve.h
// One measured acceptance, as a serving profile and a calibration read it:
// the per-position marginal and conditional acceptance, the histogram and the
// two accept lengths of one policy and setting of one job. Plain values, no
// torch and no proto: core fills it from an EvalResult (greedy or one sampled
// setting), served/ exports and calibrates it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace dflash::served {

struct Range {
  double lo = 0, hi = 0;
};

struct AcceptanceCurve {
  // Which numbers these are: "greedy", or the sampled setting's text with its
  // policy, e.g. "t=0.7,p=0.95,k=20 policy=argmax".
  std::string label;
  std::string policy;  // "greedy", "sample", "argmax", "selector", "match"
  std::string engine;  // the engine preset the request named ("" = none)
  double temperature = 0, top_p = 1.0;
  int64_t top_k = 0;       // 0 = off
  int64_t block_size = 0;  // B: the verifier checks B - 1 draft tokens per step
  int64_t blocks = 0;      // verification steps measured
  int64_t samples = 0;     // requests (samples) measured
  std::string mode;        // "anchor" or "replay"
  std::string semantics;   // "zlab-current" / "zlab-2025"
  std::string family;      // "DFlash 1" / "DFlash 2"
  std::string job_id, dataset, drafter_fingerprint, dataset_fingerprint;
  // marginal[i] = P(accept length >= i + 2) = P(draft positions 1..i+1 all
  // accepted), over all blocks, i = 0..B-2. Expected values for sampled
  // settings (teacher-forced, independent positions).
  std::vector<double> marginal;
  // histogram[n] = P(exactly n drafts accepted), n = 0..B-1; sums to 1.
  std::vector<double> histogram;
  double mean_accept_length = 0;  // step-weighted: mean over blocks (includes the bonus)
  double mean_accept_length_per_request = 0;   // request-weighted: mean of per-sample means (tau)
  std::optional<Range> mean_accept_length_ci;  // 95%, when the job computed intervals
  std::optional<Range> per_request_ci;
  // What the numbers assume (e.g. "teacher-forced prefix", "independent positions").
  std::vector<std::string> approximations;
  // Per-slice curves (category name -> its curve), when the data has slices.
  std::map<std::string, AcceptanceCurve> per_category;
};

// conditional[i] = marginal[i] / marginal[i - 1] (conditional[0] =
// marginal[0]); a position whose previous marginal is 0 is unavailable
// (std::nullopt), never 0.
std::vector<std::optional<double>> ConditionalRates(const std::vector<double>& marginal);

// What every exported or calibrated curve must satisfy: B - 1 marginal rates
// in [0, 1], nonincreasing (accepting position j needs 1..j-1), 1 + their sum
// = the step-weighted mean, a histogram that sums to 1. Internal when broken:
// it is our bug, never the user's.
absl::Status CheckCurveInvariants(const AcceptanceCurve& curve);

}  // namespace dflash::served
