// File: weight_map.h
// Strict validation of a checkpoint against an expected schema, and loading
// of the validated tensors. Wrapper prefixes (module., _orig_mod.,
// _fsdp_wrapped_module., model., draft_model.) are stripped only when that
// makes the names match the schema, and the report says which was stripped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "weights/map_policy.h"
#include "weights/tensor_source.h"
#include "weights/weight_report.h"
#include "weights/weight_spec.h"

namespace dflash::weights {

struct ValidateOptions {
  bool allow_unexpected = false;   // strict by default
  bool compute_stats = false;      // reads every tensor
  std::vector<IgnoreRule> ignore;  // tensors present on purpose but unused
  // compute_stats reads one tensor at a time; one larger than this (the
  // server's resident budget) is refused before it is read. 0: no limit.
  int64_t max_tensor_bytes = 0;
};

// Always returns a report (ok or not) unless the source cannot be read at all.
// report.ok is false on any missing tensor, shape or dtype mismatch, or
// (unless allowed) unexpected tensor; report.problems lists them, worst first.
absl::StatusOr<WeightReport> ValidateWeightMap(const TensorSource& source,
                                               const std::vector<TensorSpec>& schema,
                                               const ValidateOptions& options);

// Reads every FOUND tensor of a report (which must be ok) converted to
// `dtype` on `device`, keyed by schema name. Computes the fingerprint into
// `report` and checks every tensor for NaN/Inf (a tensor holding any makes the
// report not ok, with its stats filled in, and the load fails with
// InvalidArgument: bad content); statistics of clean tensors are left to
// ValidateWeightMap's compute_stats. FailedPrecondition when the report is
// not ok or the file changed since it was validated. Tensors already in
// their resident dtype on the CPU are views of the file where `policy`
// allows (map_policy.h); `tally`, when given, counts mapped and copied bytes
// and the load fails (FailedPrecondition) when a mapped file was written in
// place while it was read.
absl::StatusOr<std::map<std::string, at::Tensor>> LoadValidatedWeights(
    const TensorSource& source, WeightReport& report, c10::ScalarType dtype, c10::Device device,
    const MapPolicy& policy = {}, MapTally* tally = nullptr);

}  // namespace dflash::weights
