// The two stored leaves with a form of their own (store/leaf_json.h): a
// sampling setting, its keys left out at their defaults, and a 95% interval
// as [lo, hi] or null.
#include "store/leaf_json.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;

TEST(LeafJsonTest, SettingKeysAtTheirDefaultsAreLeftOut) {
  EXPECT_EQ(SettingToJson(types::SamplingSetting{}),
            json::parse(R"({"temperature": 0.0, "top_p": 1.0, "top_k": 0})"));
  const types::SamplingSetting s{0.6, 0.95, 20, types::ProposalPolicy::kMatch, false, "vllm"};
  const json j = SettingToJson(s);
  EXPECT_EQ(j, json::parse(R"({"temperature": 0.6, "top_p": 0.95, "top_k": 20,
                               "policy": "match", "engine": "vllm", "truncate_draft": false})"));
  const types::SamplingSetting back = SettingFromJson(j);
  EXPECT_EQ(back.temperature, 0.6);
  EXPECT_EQ(back.top_p, 0.95);
  EXPECT_EQ(back.top_k, 20);
  EXPECT_EQ(back.policy, types::ProposalPolicy::kMatch);
  EXPECT_EQ(back.engine, "vllm");
  EXPECT_FALSE(back.truncate_draft);
}

// Records from before policies hold none: the drafter's own rule.
TEST(LeafJsonTest, SettingsFromBeforePoliciesReadAsDefault) {
  const types::SamplingSetting s =
      SettingFromJson(json::parse(R"({"temperature": 1.0, "top_p": 0.9, "top_k": 5})"));
  EXPECT_EQ(s.policy, types::ProposalPolicy::kDefault);
  EXPECT_EQ(s.engine, "");
  EXPECT_TRUE(s.truncate_draft);
  EXPECT_THROW(SettingFromJson(json::parse(R"({"top_p": 0.9, "top_k": 5})")), json::out_of_range);
}

TEST(LeafJsonTest, IntervalsAreAPairOrNull) {
  EXPECT_EQ(IntervalToJson(std::nullopt), json(nullptr));
  EXPECT_EQ(IntervalToJson(types::Interval{0.25, 1.5}), json::array({0.25, 1.5}));
  EXPECT_FALSE(IntervalFromJson(json(nullptr)).has_value());
  const std::optional<types::Interval> i = IntervalFromJson(json::array({-1.0, 2.0}));
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->lo, -1.0);
  EXPECT_EQ(i->hi, 2.0);
  EXPECT_THROW(IntervalFromJson(json::array({1.0})), json::out_of_range);
}

}  // namespace
}  // namespace dflash::store
