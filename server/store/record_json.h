// File: record_json.h
// types::JobRecord <-> JSON text, the form records take in a store's columns. Every
// field round-trips exactly (doubles are written with 17 significant digits).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "types/job_types.h"

namespace dflash::store {

std::string RecordToJson(const types::JobRecord& record);
// InvalidArgument when the text is not a record this code wrote.
absl::StatusOr<types::JobRecord> RecordFromJson(const std::string& text);

}  // namespace dflash::store
