// File: options_json.h
// types::EvalOptions <-> JSON, the options of a stored job's request
// (record_json.h). Fields added since the first records are written only
// when set and read back with the defaults older records ran under.
#pragma once

#include <nlohmann/json.hpp>

#include "types/eval_types.h"

namespace dflash::store {

nlohmann::json OptionsToJson(const types::EvalOptions& o);
// Throws nlohmann::json::exception when a field the first records already
// held is missing or of the wrong type (RecordFromJson catches it).
types::EvalOptions OptionsFromJson(const nlohmann::json& j);

}  // namespace dflash::store
