// File: resource_convert.h
// proto <-> core for the resident objects: server info, resources, weight
// reports, and the validate and load requests (names, dtypes, devices and
// LoadDataset's layer_ids checked for shape here).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "core/fleet_member.h"
#include "dflash/eval/v1/resources.pb.h"
#include "dflash/eval/v1/service.pb.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "service/proto_fields.h"

namespace dflash::service {

void ToProto(const core::ServerInfo& in, pb::ServerInfo* out);
void ToProto(const resident::ResourceInfo& in, pb::Resource* out);
void ToProto(const core::FleetMember& in, pb::FleetServer* out);
void ToProto(const weights::WeightReport& in, pb::WeightReport* out);
void ToProto(const resident::LoadResult& in, pb::LoadResponse* out);

// "" for DTYPE_UNSPECIFIED; INVALID_ARGUMENT for a value not in the enum.
absl::StatusOr<std::string> DTypeFromProto(pb::DType dtype);
pb::DType DTypeToProto(const std::string& dtype);
absl::StatusOr<resident::ResourceKind> KindFromProto(pb::ResourceKind kind);

absl::StatusOr<resident::ValidateParams> FromProto(const pb::ValidateCheckpointRequest& in);
absl::StatusOr<resident::LoadDrafterParams> FromProto(const pb::LoadDrafterRequest& in);
absl::StatusOr<resident::LoadTargetParams> FromProto(const pb::LoadTargetRequest& in);
absl::StatusOr<resident::LoadDatasetParams> FromProto(const pb::LoadDatasetRequest& in);

}  // namespace dflash::service
