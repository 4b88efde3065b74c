// The typed field readers (config/internal/config_fields.h): absent and null
// read as absent and leave the output alone, a wrong type names the field,
// the type wanted and the value found, and TopLevel reads through the key
// table (the undeclared-key case is in key_table_test).
#include "config/internal/config_fields.h"

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sample_configs.h"
#include "test_util/status_matchers.h"

namespace dflash::config::internal {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::IsOkAndHolds;
using samples::StatusWith;

using ::dflash::testing::kInvalid;

TEST(ConfigFieldsTest, AbsentAndNullLeaveTheOutputAlone) {
  const Json obj = Json::parse(R"({"n": null})");
  int64_t i = 7;
  double d = 0.5;
  bool b = true;
  std::string s = "kept";
  for (const char* key : {"n", "absent"}) {
    EXPECT_THAT(ReadInt(obj, key, key, &i), IsOkAndHolds(false));
    EXPECT_THAT(ReadDouble(obj, key, key, &d), IsOkAndHolds(false));
    EXPECT_THAT(ReadBool(obj, key, key, &b), IsOkAndHolds(false));
    EXPECT_THAT(ReadString(obj, key, key, &s), IsOkAndHolds(false));
  }
  EXPECT_EQ(i, 7);
  EXPECT_EQ(d, 0.5);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "kept");
}

TEST(ConfigFieldsTest, PresentValuesAreRead) {
  const Json obj = Json::parse(R"({"i": -3, "d": 2, "b": false, "s": "silu"})");
  int64_t i = 0;
  double d = 0;
  bool b = true;
  std::string s;
  EXPECT_THAT(ReadInt(obj, "i", "i", &i), IsOkAndHolds(true));
  // An integer is a number: 2 reads as 2.0.
  EXPECT_THAT(ReadDouble(obj, "d", "d", &d), IsOkAndHolds(true));
  EXPECT_THAT(ReadBool(obj, "b", "b", &b), IsOkAndHolds(true));
  EXPECT_THAT(ReadString(obj, "s", "s", &s), IsOkAndHolds(true));
  EXPECT_EQ(i, -3);
  EXPECT_EQ(d, 2.0);
  EXPECT_FALSE(b);
  EXPECT_EQ(s, "silu");
}

TEST(ConfigFieldsTest, WrongTypeNamesFieldWantedAndFound) {
  const Json obj = Json::parse(R"({"v": 1.5, "t": "x", "a": [1]})");
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  EXPECT_THAT(ReadInt(obj, "v", "dflash_config.v", &i),
              StatusWith(kInvalid,
                         "config field 'dflash_config.v' must be an integer; got "
                         "number 1.5"));
  EXPECT_THAT(ReadDouble(obj, "t", "t", &d),
              StatusWith(kInvalid, "config field 't' must be a number; got string \"x\""));
  EXPECT_THAT(ReadBool(obj, "v", "v", &b),
              StatusWith(kInvalid, "config field 'v' must be a boolean; got number 1.5"));
  EXPECT_THAT(ReadString(obj, "a", "a", &s),
              StatusWith(kInvalid, "config field 'a' must be a string; got array [1]"));
}

TEST(ConfigFieldsTest, RequireIntAndRequirePositive) {
  const Json obj = Json::parse(R"({"n": 4, "z": null, "f": 4.0})");
  int64_t v = 0;
  EXPECT_THAT(RequireInt(obj, "n", "n", &v), IsOk());
  EXPECT_EQ(v, 4);
  EXPECT_THAT(RequireInt(obj, "z", "rope.z", &v),
              StatusWith(kInvalid, "config field 'rope.z' is missing"));
  EXPECT_THAT(RequireInt(obj, "f", "f", &v),
              StatusWith(kInvalid, "config field 'f' must be an integer; got number 4.0"));
  EXPECT_THAT(Missing("head_dim"), StatusWith(kInvalid, "config field 'head_dim' is missing"));
  EXPECT_THAT(RequirePositive("block_size", 1), IsOk());
  EXPECT_THAT(RequirePositive("block_size", 0),
              StatusWith(kInvalid, "config field 'block_size' must be positive; got 0"));
  EXPECT_THAT(RequirePositive("block_size", -2),
              StatusWith(kInvalid, "config field 'block_size' must be positive; got -2"));
}

TEST(ConfigFieldsTest, TopLevelReadsDeclaredKeys) {
  const Json root = Json::parse(R"({"hidden_size": 64, "rms_norm_eps": null,
                                    "attention_bias": true, "dtype": "bfloat16"})");
  const TopLevel top(root);
  int64_t n = 0;
  EXPECT_THAT(top.RequireInt("hidden_size", &n), IsOk());
  EXPECT_EQ(n, 64);
  EXPECT_THAT(top.RequireInt("num_hidden_layers", &n),
              StatusWith(kInvalid, "config field 'num_hidden_layers' is missing"));
  EXPECT_THAT(top.Find("rms_norm_eps"), IsOkAndHolds(nullptr));
  double eps = 1.0;
  EXPECT_THAT(top.Double("rms_norm_eps", &eps), IsOkAndHolds(false));
  bool bias = false;
  EXPECT_THAT(top.Bool("attention_bias", &bias), IsOkAndHolds(true));
  EXPECT_TRUE(bias);
  std::string dtype;
  EXPECT_THAT(top.String("dtype", &dtype), IsOkAndHolds(true));
  EXPECT_EQ(dtype, "bfloat16");
  EXPECT_THAT(top.Int("dtype", &n),
              StatusWith(kInvalid,
                         "config field 'dtype' must be an integer; got string "
                         "\"bfloat16\""));
}

}  // namespace
}  // namespace dflash::config::internal
