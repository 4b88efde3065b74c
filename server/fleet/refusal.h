// File: refusal.h
// A fleet runner's "not on this server": the job names more than this
// server's memory budget can hold. The fleet queue then hands the job back
// for another server (which the claim will not give it to again), and fails
// it only when every live server of the fleet has refused it.
#pragma once

#include "absl/status/status.h"

namespace dflash::fleet {

// `cause` (its code and message) marked as a refusal.
absl::Status Refusal(absl::Status cause);
bool IsRefusal(const absl::Status& status);

// The outcome a refused attempt records: "refused: <message>".
inline constexpr char kRefusedPrefix[] = "refused: ";

}  // namespace dflash::fleet
