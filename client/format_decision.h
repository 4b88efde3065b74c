// File: format_decision.h
// The decision metrics in words (docs/decision-metrics.md): the target
// consistency of a dataset and target, sampled acceptance next to the greedy
// numbers, and the draft-length curve; and the --sampling spec parser.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dflash/eval/v1/eval.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

// "t=0.6,p=0.95,k=20" (any order; t required; p and k optional) -> setting.
// InvalidArgument naming the spec and the bad part.
absl::StatusOr<pb::SamplingSetting> ParseSamplingSpec(const std::string& spec);

// "target consistency with T: 99.8% (512 of 513 response positions ...)".
std::string FormatTargetConsistency(const pb::TargetConsistency& c, const std::string& target);

// The draft-length curve and sampled acceptance blocks of an eval result
// ("" when it has neither).
std::string FormatDecisionMetrics(const pb::EvalResult& r);
// The sampled-acceptance block alone ("" without sampling settings).
std::string FormatSampledAcceptance(const pb::EvalResult& r);

}  // namespace dflash::client
