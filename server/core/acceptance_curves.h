// File: acceptance_curves.h
// A finished job's numbers as served/'s AcceptanceCurve: the greedy result
// (setting 0) or one sampled setting under its policy (setting i >= 1 =
// result.sampling[i - 1]), with what they assume and where they come from.
#pragma once

#include "absl/status/statusor.h"
#include "served/acceptance_curve.h"
#include "types/job_types.h"

namespace dflash::core {

// FailedPrecondition for a job without a result, a suite job, or a record
// from before marginal acceptance was stored; InvalidArgument for a setting
// the job does not have (naming the ones it has).
absl::StatusOr<served::AcceptanceCurve> CurveFromJob(const types::JobRecord& job, int setting);

}  // namespace dflash::core
