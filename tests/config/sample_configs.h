// Sample config.json files for the config/ tests (the released drafters'
// shapes in z-lab's layout) and the matchers they share.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "config/drafter_config.h"
#include "gmock/gmock.h"
#include "test_util/status_matchers.h"

namespace dflash::config::samples {

// The released Qwen3.6-27B drafter's shape (dflash-semantics §6), 5.x style.
nlohmann::json Qwen36Config();
// A small 4.x style config.
nlohmann::json V4Config();
// The released DFlash 2 config of dflash2-semantics.md §1 (shape only).
nlohmann::json DFlash2Config();

// ParseDrafterConfig of the JSON's text.
absl::StatusOr<DrafterConfig> Parse(const nlohmann::json& j);

// Exact message for strings, any matcher otherwise.
template <typename M>
auto StatusWith(absl::StatusCode code, M matcher) {
  return ::dflash::testing::StatusIs(code, matcher);
}
inline auto StatusWith(absl::StatusCode code, const std::string& message) {
  return ::dflash::testing::StatusIs(code, ::testing::Eq(message));
}
inline auto StatusWith(absl::StatusCode code, const char* message) {
  return ::dflash::testing::StatusIs(code, ::testing::Eq(std::string(message)));
}

}  // namespace dflash::config::samples
