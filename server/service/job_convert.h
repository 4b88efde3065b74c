// File: job_convert.h
// proto <-> job types: submitted requests, job records, listings and
// CompareEvals (page sizes, step ranges, labels and ids checked for shape).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job_service.h"
#include "dflash/eval/v1/eval.pb.h"
#include "dflash/eval/v1/service.pb.h"
#include "service/proto_fields.h"
#include "types/job_types.h"

namespace dflash::service {

// Most jobs one CompareEvals may name; largest ListEvals page.
inline constexpr int kMaxCompareJobs = 100;
inline constexpr int kMaxPageSize = 1000;

pb::JobState JobStateToProto(types::JobState state);
// The EvalRequest as FromProto reads it, and the job's run, step and labels.
absl::StatusOr<types::JobRequest> JobRequestFromProto(const pb::EvalRequest& in);
void ToProto(const types::JobRequest& in, pb::EvalRequest* out);
void ToProto(const types::JobRecord& in, pb::EvalJob* out);
absl::StatusOr<types::ListQuery> FromProto(const pb::ListEvalsRequest& in);
// CompareEvals' ids: at most kMaxCompareJobs, each a well-formed id, none twice.
absl::StatusOr<std::vector<std::string>> JobIdsFromProto(const pb::CompareEvalsRequest& in);
// CompareEvals' pairing options: resamples in [0, kMaxCiResamples] (0 = 1000).
absl::StatusOr<core::CompareOptions> CompareOptionsFromProto(const pb::CompareEvalsRequest& in);
void ToProto(const core::Comparison& in, pb::CompareEvalsResponse* out);

}  // namespace dflash::service
