// File: decision_metrics_json.h
// JSON of what the decision metrics are made of (docs/decision-metrics.md):
// sampling settings, intervals, and a result's sampled acceptance,
// draft-length curve, slices and target consistency, in the form a stored
// record holds them (record_json.h). Shared by the options' JSON
// (options_json.h) and the result's (result_json.h); every field here is
// absent in older records and read back with its default.
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
std::optional<types::Interval> IntervalFromJson(const nlohmann::json& j, const char* key);

// The result's sampled acceptance, draft-length curve, slices, loop shares
// and target consistency, added to `out` / read from `j` into `r`.
void AddDecisionMetrics(const types::EvalResult& r, nlohmann::json& out);
void ReadDecisionMetrics(const nlohmann::json& j, types::EvalResult& r);

}  // namespace dflash::store
