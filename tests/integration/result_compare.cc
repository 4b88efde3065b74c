// File: result_compare.cc
#include "integration/result_compare.h"

#include <cmath>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"

namespace dflash::testing {

using json = nlohmann::json;

void ExpectSameResult(const json& a, const json& b, const std::string& path) {
  static const std::set<std::string> kSkip = {"setupSeconds", "computeSeconds", "tokensPerSecond",
                                              "shards"};
  ASSERT_EQ(a.type(), b.type()) << path;
  if (a.is_object()) {
    for (const auto& [k, v] : a.items()) {
      if (kSkip.count(k)) continue;
      ASSERT_TRUE(b.contains(k)) << path << "/" << k;
      ExpectSameResult(v, b.at(k), path + "/" + k);
    }
    for (const auto& [k, v] : b.items()) {
      if (!kSkip.count(k)) EXPECT_TRUE(a.contains(k)) << path << "/" << k;
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (size_t i = 0; i < a.size(); ++i) {
      ExpectSameResult(a[i], b[i], path + "[" + std::to_string(i) + "]");
    }
  } else if (a.is_number_float() && path.find("meanCrossEntropy") != std::string::npos) {
    EXPECT_NEAR(a.get<double>(), b.get<double>(), 1e-6 * std::abs(a.get<double>())) << path;
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

void ExpectShardsCover(const json& result, int64_t n, size_t shards) {
  ASSERT_EQ(result["shards"].size(), shards) << result["shards"].dump();
  int64_t next = 0, blocks = 0;
  for (const json& s : result["shards"]) {
    EXPECT_EQ(s.contains("first") ? JsonInt(s["first"]) : 0, next);
    next = JsonInt(s["end"]);
    blocks += s.contains("blocks") ? JsonInt(s["blocks"]) : 0;
  }
  EXPECT_EQ(next, n);
  EXPECT_EQ(blocks, JsonInt(result["blocks"]));
}

}  // namespace dflash::testing
