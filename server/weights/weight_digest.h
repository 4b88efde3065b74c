// File: weight_digest.h
// Reading the FOUND tensors of a weight report: each one re-checked against
// the shape it was validated with, added to the fingerprint and, when asked,
// given its statistics (NaN/Inf make problem lines, all zeros a warning).
// Its own file because both halves of weight_map.h read tensors this way:
// ValidateWeightMap with compute_stats, and LoadValidatedWeights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weights/fingerprint.h"
#include "weights/map_policy.h"
#include "weights/tensor_source.h"
#include "weights/weight_report.h"

namespace dflash::weights {

// " (stored as '<stored name>')" when the entry was found under another
// name, else "".
std::string StoredAs(const TensorEntry& e);

// The FOUND entries in fingerprint order (sorted by schema name).
std::vector<TensorEntry*> FoundSorted(WeightReport& report);

enum class DigestStats { kCompute, kSkip };

// Reads one FOUND tensor as a contiguous CPU tensor (a view of its file
// where the source maps it). FailedPrecondition when its shape changed
// since validation.
absl::StatusOr<at::Tensor> ReadValidated(const TensorSource& source, const TensorEntry& e);

// ReadValidated, then adds the tensor to the fingerprint (and its
// statistics with DigestStats::kCompute).
absl::StatusOr<at::Tensor> ReadAndDigest(const TensorSource& source, TensorEntry& e,
                                         DigestStats stats, Fingerprinter& fp);

// LoadValidatedWeights' read of one FOUND tensor: its stored bytes read
// once for the fingerprint and the NaN/Inf check, the tensor kept as a view
// of its file where `policy` allows or copied to `dtype` on `device` in
// chunks (counted in `tally`). A tensor holding NaN/Inf gets its statistics
// and sets `*not_finite`; the caller reports it.
absl::StatusOr<at::Tensor> LoadAndDigest(const TensorSource& source, TensorEntry& e,
                                         c10::ScalarType dtype, c10::Device device,
                                         const MapPolicy& policy, MapTally& tally,
                                         Fingerprinter& fp, bool* not_finite);

// Stats problems (NaN/Inf: one line each in `bad_values`) and facts
// (all-zero: a warning in report.facts) of the entries that have stats.
void ReportStats(WeightReport& report, const std::vector<TensorEntry*>& entries,
                 std::vector<std::string>* bad_values);

// Reads every FOUND tensor for its statistics and the report's fingerprint;
// ResourceExhausted, before reading it, for a tensor larger than
// `max_tensor_bytes` (0: no limit). NaN/Inf go to `bad_values`.
absl::Status ComputeStatsAndFingerprint(const TensorSource& source, int64_t max_tensor_bytes,
                                        WeightReport* report, std::vector<std::string>* bad_values);

}  // namespace dflash::weights
