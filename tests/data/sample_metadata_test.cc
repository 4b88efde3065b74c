// ParseSampleMetadata: the per-sample metadata lines and their refusals.
#include "data/sample_metadata.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;

TEST(SampleMetadataTest, ParsesLinesByIndex) {
  ASSERT_OK_AND_ASSIGN(auto m, ParseSampleMetadata("{\"index\": 3, \"category\": \"math\", "
                                                   "\"thinking\": false}\n\n"
                                                   "{\"index\": 1, \"language\": \"de\"}",
                                                   "m.jsonl"));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(3).category, "math");
  EXPECT_EQ(m.at(3).thinking, "off");
  EXPECT_EQ(m.at(1).language, "de");
  EXPECT_EQ(m.at(1).thinking, "");
}

TEST(SampleMetadataTest, RefusalsNameTheLine) {
  EXPECT_THAT(ParseSampleMetadata("{\"index\": 1}\n[1]", "m.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata 'm.jsonl' line 2: is not a JSON object"));
  EXPECT_THAT(ParseSampleMetadata("{\"category\": \"x\"}", "m.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata 'm.jsonl' line 1: needs an integer 'index' >= 0 (the "
                       "capture file's sample index); got none"));
  EXPECT_THAT(ParseSampleMetadata("{\"index\": -1}", "m.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata 'm.jsonl' line 1: needs an integer 'index' >= 0 (the "
                       "capture file's sample index); got -1"));
  EXPECT_THAT(ParseSampleMetadata("{\"index\": 2, \"category\": 5}", "m.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata 'm.jsonl' line 1: 'category' must be a string; got 5"));
  EXPECT_THAT(ParseSampleMetadata("{\"index\": 2}\n{\"index\": 2}", "m.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata 'm.jsonl' line 2: sample 2 is listed twice"));
}

TEST(SampleMetadataTest, TheDefaultFileIsOptional) {
  ASSERT_OK_AND_ASSIGN(auto m, ReadSampleMetadata("/nonexistent-dir", ""));
  EXPECT_TRUE(m.empty());
  EXPECT_THAT(ReadSampleMetadata("/nonexistent-dir", "x.jsonl"),
              StatusIs(absl::StatusCode::kNotFound,
                       "sample metadata '/nonexistent-dir/x.jsonl' (named by the manifest's "
                       "'sample_metadata') is not a readable file"));
}

}  // namespace
}  // namespace dflash::data
