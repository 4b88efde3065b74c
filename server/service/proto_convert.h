// File: proto_convert.h
// proto <-> core types. Requests are checked here for shape: enums in range,
// counts not negative, names, ids and labels well formed, page and list sizes
// within the API's limits. Meaning (does the object exist, does the drafter
// fit the dataset) is checked by the core.
#pragma once

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "core/job_service.h"
#include "dflash/eval/v1/eval.pb.h"
#include "dflash/eval/v1/resources.pb.h"
#include "dflash/eval/v1/service.pb.h"
#include "types/job_types.h"

namespace dflash::service {

namespace pb = ::dflash::eval::v1;

void ToProto(const core::ServerInfo& in, pb::ServerInfo* out);
void ToProto(const core::ResourceInfo& in, pb::Resource* out);
void ToProto(const weights::WeightReport& in, pb::WeightReport* out);
void ToProto(const core::LoadResult& in, pb::LoadResponse* out);
void ToProto(const eval::EvalResult& in, pb::EvalResult* out);

// Longest resource name, job id, run or label value a request may carry.
inline constexpr size_t kMaxNameBytes = 256;
// Most jobs one CompareEvals may name; largest ListEvals page.
inline constexpr int kMaxCompareJobs = 100;
inline constexpr int kMaxPageSize = 1000;

// A caller-chosen name or id in field `field`: at most kMaxNameBytes, no
// control characters (they would reach log lines). Empty is allowed.
absl::Status CheckName(absl::string_view field, absl::string_view value);
// The same, and empty is INVALID_ARGUMENT "<field> is empty".
absl::Status CheckId(absl::string_view field, absl::string_view value);

// "" for DTYPE_UNSPECIFIED; INVALID_ARGUMENT for a value not in the enum.
absl::StatusOr<std::string> DTypeFromProto(pb::DType dtype);
pb::DType DTypeToProto(const std::string& dtype);
absl::StatusOr<core::ResourceKind> KindFromProto(pb::ResourceKind kind);

absl::StatusOr<core::ValidateParams> FromProto(const pb::ValidateCheckpointRequest& in);
absl::StatusOr<core::LoadDrafterParams> FromProto(const pb::LoadDrafterRequest& in);
absl::StatusOr<core::LoadTargetParams> FromProto(const pb::LoadTargetRequest& in);
absl::StatusOr<core::LoadDatasetParams> FromProto(const pb::LoadDatasetRequest& in);
absl::StatusOr<core::EvalParams> FromProto(const pb::EvalRequest& in);

// Jobs.
pb::JobState JobStateToProto(jobs::JobState state);
absl::StatusOr<jobs::JobRequest> JobRequestFromProto(const pb::EvalRequest& in);
void ToProto(const jobs::JobRequest& in, pb::EvalRequest* out);
void ToProto(const jobs::JobRecord& in, pb::EvalJob* out);
absl::StatusOr<jobs::ListQuery> FromProto(const pb::ListEvalsRequest& in);
// CompareEvals' ids: at most kMaxCompareJobs, each a well-formed id, none twice.
absl::StatusOr<std::vector<std::string>> JobIdsFromProto(const pb::CompareEvalsRequest& in);
void ToProto(const core::Comparison& in, pb::CompareEvalsResponse* out);

}  // namespace dflash::service
