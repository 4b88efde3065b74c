// File: result_json.h
// types::EvalResult <-> JSON, a stored job's result (record_json.h): every
// field of its table (types/eval_result_fields.h, through field_json.h)
// under its name, plus the few the table leaves to hand code. Fields added
// since the first records are read back with their defaults when absent.
#pragma once

#include <nlohmann/json.hpp>

#include "types/eval_types.h"

namespace dflash::store {

nlohmann::json ResultToJson(const types::EvalResult& r);
// Throws nlohmann::json::exception when a field the first records already
// held is missing or of the wrong type (RecordFromJson catches it).
types::EvalResult ResultFromJson(const nlohmann::json& j);

}  // namespace dflash::store
