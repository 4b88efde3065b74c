// File: result_json.h
// types::EvalResult <-> JSON, a stored job's result (record_json.h): its
// counts, per-position and per-sample metrics, timing, provenance, gate
// verdict, shards and a suite's per-dataset results. Fields added since the
// first records are read back with their defaults when absent.
#pragma once

#include <nlohmann/json.hpp>

#include "types/eval_types.h"

namespace dflash::store {

nlohmann::json ResultToJson(const types::EvalResult& r);
// Throws nlohmann::json::exception when a field the first records already
// held is missing or of the wrong type (RecordFromJson catches it).
types::EvalResult ResultFromJson(const nlohmann::json& j);

}  // namespace dflash::store
