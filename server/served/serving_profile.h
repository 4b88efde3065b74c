// File: serving_profile.h
// A measured acceptance written in the form a serving stack reads back:
// Model-Optimizer's speculation_profile.json, vLLM's synthetic rejection
// sampler config, SGLang's simulated accept length (docs/serving-profiles.md).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "served/acceptance_curve.h"

namespace dflash::served {

enum class ProfileFormat { kModelOpt, kVllm, kSglang };

// InvalidArgument "unknown profile format 'x' (known: modelopt, vllm, sglang)".
absl::StatusOr<ProfileFormat> ParseProfileFormat(absl::string_view name);
const char* ProfileFormatName(ProfileFormat format);

// The file's text. Internal if the curve breaks CheckCurveInvariants;
// FailedPrecondition for a curve the format cannot carry (no blocks).
absl::StatusOr<std::string> ExportProfile(const AcceptanceCurve& curve, ProfileFormat format);

}  // namespace dflash::served
