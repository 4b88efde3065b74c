// File: eval_convert.h
// proto <-> core for one evaluation: EvalRequest -> EvalParams (enums in
// range, counts not negative, names well formed, semantics known) and
// EvalResult -> its proto.
#pragma once

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "dflash/eval/v1/eval.pb.h"
#include "service/proto_fields.h"

namespace dflash::service {

// Most bootstrap resamples one request may ask for (intervals and compare).
inline constexpr int kMaxCiResamples = 100000;

absl::StatusOr<types::EvalParams> FromProto(const pb::EvalRequest& in);
void ToProto(const types::EvalResult& in, pb::EvalResult* out);
void ToProto(const types::TargetConsistency& in, pb::TargetConsistency* out);

}  // namespace dflash::service
