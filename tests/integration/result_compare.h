// File: result_compare.h
// Comparing evaluation results as the CLI's JSON (proto JSON): a sharded or
// fleet-split evaluation against one pass (issue 30).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dflash::testing {

// Everything but timing and placement equal; cross entropy (float32 sums of
// other batch shapes and thread counts) within 1e-6 relative.
void ExpectSameResult(const nlohmann::json& a, const nlohmann::json& b,
                      const std::string& path = "");

// The shards cover [0, n) in order, contiguous, with the result's blocks.
void ExpectShardsCover(const nlohmann::json& result, int64_t n, size_t shards);

}  // namespace dflash::testing
