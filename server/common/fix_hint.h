// File: fix_hint.h
// Lower layers describe a problem in their own terms; how to fix it with a
// flag or a command is the edge's business (the service or the client
// knows its own flag names). A status carries what kind of fix applies as a
// typed payload; service/status_convert.cc turns it into words with flag
// names. Torch-free, header-only.
//
//   return WithFixHint(absl::FailedPreconditionError("no target is loaded"),
//                      FixHint::kLoadTarget);
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace dflash {

enum class FixHint {
  kLoadTarget,  // nothing of the kind is resident: load one
  kLoadDataset,
  kLoadDrafter,
  kNameTarget,  // several are resident: name one
  kNameDataset,
  kNameDrafter,
  kChooseName,      // the name is taken by another object
  kResidentBudget,  // the server's memory budget refuses it
  kEvalBlockLimit,  // the server's per-evaluation block limit refuses it
};

inline constexpr absl::string_view kFixHintPayloadUrl = "type.dflash.dev/fix-hint";

inline absl::Status WithFixHint(absl::Status status, FixHint hint) {
  if (!status.ok()) {
    status.SetPayload(kFixHintPayloadUrl, absl::Cord(std::to_string(static_cast<int>(hint))));
  }
  return status;
}

inline std::optional<FixHint> GetFixHint(const absl::Status& status) {
  auto payload = status.GetPayload(kFixHintPayloadUrl);  // absl::optional<absl::Cord>
  if (!payload.has_value()) return std::nullopt;
  int v = -1;
  if (!absl::SimpleAtoi(std::string(*payload), &v)) return std::nullopt;
  if (v < 0 || v > static_cast<int>(FixHint::kEvalBlockLimit)) return std::nullopt;
  return static_cast<FixHint>(v);
}

}  // namespace dflash
