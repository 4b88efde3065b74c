// File: leaf_json.h
// JSON of the two values whose stored form is not their struct's, so the
// field-table codec (field_json.h) calls these instead of walking a table:
// a sampling setting (keys left out at their defaults) and a 95% interval
// ([lo, hi]). The options' JSON (options_json.h) shares the setting's.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "types/eval_types.h"

namespace dflash::store {

nlohmann::json SettingToJson(const types::SamplingSetting& s);
// Records from before policies hold none: kDefault, the drafter's own rule.
types::SamplingSetting SettingFromJson(const nlohmann::json& j);

// Intervals as [lo, hi]; null when absent.
nlohmann::json IntervalToJson(const std::optional<types::Interval>& i);
std::optional<types::Interval> IntervalFromJson(const nlohmann::json& value);

}  // namespace dflash::store
