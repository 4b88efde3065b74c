// File: format.h
// Human-readable renderings of the service's messages for the terminal.
// Machine output (--json) is the proto's JSON mapping instead: ToJson().
#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/message.h>

#include "dflash/eval/v1/eval.pb.h"
#include "dflash/eval/v1/resources.pb.h"
#include "dflash/eval/v1/service.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

// Proto JSON mapping (lowerCamelCase names, as grpcurl prints), every field shown.
std::string ToJson(const google::protobuf::Message& message);

std::string HumanBytes(int64_t bytes);     // "1.5 GiB"
std::string HumanSeconds(double seconds);  // "3d 4h", "12m 5s", "1.2s"
std::string DTypeLabel(pb::DType dtype);   // "fp32", "bf16", "(default)"

std::string FormatServerInfo(const pb::ServerInfo& info);
std::string FormatResource(const pb::Resource& r);
// The resident objects and, when the reply has them, the fleet's servers.
std::string FormatResources(const pb::ListResourcesResponse& list);
std::string FormatResourceTable(const pb::ListResourcesResponse& list);
// A fleet's live servers: address, device, memory, resident objects, jobs.
std::string FormatFleet(const google::protobuf::RepeatedPtrField<pb::FleetServer>& fleet);
// Counts first, then the problems, then facts; the full tensor table only
// for entries that are not plain FOUND unless `verbose`.
std::string FormatReport(const pb::WeightReport& report, bool verbose);
std::string FormatLoadResponse(const pb::LoadResponse& resp);
// Accept length and tau (+1 bonus token explained), the per-position table
// with a bar per position, sampled acceptance when asked for, the intervals
// on one line and the gate: one screen. With `detail` also the
// accepted-count histogram, the draft-length curve, the per-position
// interval table, the slices and the timing.
std::string FormatEvalResult(const pb::EvalResult& result, bool detail = true);
// Where the samples ran, one line per shard (issue 30); "" for one shard
// that read nothing from disk.
std::string FormatShards(const pb::EvalResult& result);

}  // namespace dflash::client
