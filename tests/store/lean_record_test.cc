#include "store/lean_record.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::store {
namespace {

TEST(LeanRecordTest, EmptiesEveryPerSampleListAndNothingElse) {
  EXPECT_EQ(WithoutPerSample(R"({"result":{"tau":1.5,"per_sample":[[0,4,2.5],[1,3,1.0]],)"
                             R"("suite_results":[["d",{"per_sample" : [ [2,[1,2]] ],"x":[1]}]]}})"),
            R"({"result":{"tau":1.5,"per_sample":[],)"
            R"("suite_results":[["d",{"per_sample" : [],"x":[1]}]]}})");
}

TEST(LeanRecordTest, LeavesStringsThatSpellTheKeyAlone) {
  // A label value spelling the key (escaped quotes inside a string) and a
  // key that is only a value: neither is a per-sample list.
  const std::string text =
      R"({"labels":{"note":"\"per_sample\":[1,2]"},"k":"per_sample","per_sample2":[3]})";
  EXPECT_EQ(WithoutPerSample(text), text);
  // "per_sample" as a value followed by ':' cannot happen in valid JSON; as
  // a value before ',' it is left as it is.
  EXPECT_EQ(WithoutPerSample(R"(["per_sample",[1]])"), R"(["per_sample",[1]])");
}

TEST(LeanRecordTest, UnterminatedTextIsReturnedUnchangedForTheParserToReport) {
  const std::string text = R"({"per_sample":[[1,2],[3)";
  EXPECT_EQ(WithoutPerSample(text), text);
  EXPECT_EQ(WithoutPerSample(""), "");
  EXPECT_EQ(WithoutPerSample(R"({"a":"unterminated)"), R"({"a":"unterminated)");
}

}  // namespace
}  // namespace dflash::store
