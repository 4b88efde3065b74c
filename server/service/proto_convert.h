// File: proto_convert.h
// proto <-> core types. Requests are validated here only for shape (enums in
// range); meaning is checked by the core.
#pragma once

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "core/job_service.h"
#include "store/result_store.h"
#include "dflash/eval/v1/eval.pb.h"
#include "dflash/eval/v1/resources.pb.h"
#include "dflash/eval/v1/service.pb.h"

namespace dflash::service {

namespace pb = ::dflash::eval::v1;

void ToProto(const core::ServerInfo& in, pb::ServerInfo* out);
void ToProto(const core::ResourceInfo& in, pb::Resource* out);
void ToProto(const weights::WeightReport& in, pb::WeightReport* out);
void ToProto(const core::LoadResult& in, pb::LoadResponse* out);
void ToProto(const eval::EvalResult& in, pb::EvalResult* out);

// "" for DTYPE_UNSPECIFIED.
std::string DTypeFromProto(pb::DType dtype);
pb::DType DTypeToProto(const std::string& dtype);
absl::StatusOr<core::ResourceKind> KindFromProto(pb::ResourceKind kind);

absl::StatusOr<core::EvalParams> FromProto(const pb::EvalRequest& in);

// Jobs.
pb::JobState JobStateToProto(store::JobState state);
absl::StatusOr<store::JobRequest> JobRequestFromProto(const pb::EvalRequest& in);
void ToProto(const store::JobRequest& in, pb::EvalRequest* out);
void ToProto(const store::JobRecord& in, pb::EvalJob* out);
absl::StatusOr<store::ListQuery> FromProto(const pb::ListEvalsRequest& in);
void ToProto(const core::Comparison& in, pb::CompareEvalsResponse* out);

}  // namespace dflash::service
