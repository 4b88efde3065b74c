// The dataset manifest's layer_numbering: vLLM capture ids are converted to
// hf-layer ids once, at parse; capture id 0 and unknown numberings refused.
#include "data/layer_numbering.h"

#include "data/dataset_manifest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::Pair;

TEST(LayerNumberingTest, CaptureIdsBecomeHfLayersAtParse) {
  ASSERT_OK_AND_ASSIGN(auto m, ParseManifest(R"({"layer_numbering": "vllm-capture-id",
      "features": {"hidden_states": [2, 17, 32, 47, 62]}})",
                                             "/d/dataset.json"));
  EXPECT_EQ(m.numbering, LayerNumbering::kVllmCaptureId);
  EXPECT_THAT(m.features, ElementsAre(Pair("hidden_states", ElementsAre(1, 16, 31, 46, 61))));
  ASSERT_OK_AND_ASSIGN(auto h, ParseManifest(R"({"layer_numbering": "hf-layer",
      "features": {"hidden_states": [1, 16]}})",
                                             "/d/dataset.json"));
  EXPECT_EQ(h.numbering, LayerNumbering::kHfLayer);
  EXPECT_THAT(h.features, ElementsAre(Pair("hidden_states", ElementsAre(1, 16))));
  ASSERT_OK_AND_ASSIGN(auto d, ParseManifest(R"({"features": {"hidden_states": [1]}})", "m"));
  EXPECT_EQ(d.numbering, LayerNumbering::kHfLayer);  // the default
}

TEST(LayerNumberingTest, BadDeclarationsAreRefused) {
  EXPECT_THAT(
      ParseManifest(R"({"layer_numbering": "vllm-capture-id",
          "features": {"hidden_states": [0, 17]}})",
                    "/d/dataset.json"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq("manifest '/d/dataset.json': feature 'hidden_states' lists capture id 0 "
                  "(vllm-capture-id: id 0 is the embeddings, which no DFlash drafter reads; "
                  "target layers start at 1)")));
  EXPECT_THAT(
      ParseManifest(R"({"layer_numbering": "hf", "features": {"hidden_states": [1]}})", "m"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq("manifest 'm': 'layer_numbering' is 'hf'; expected 'hf-layer' (output of "
                  "layer k = k: z-lab, SpecForge, Model-Optimizer) or 'vllm-capture-id' (output "
                  "of layer k = k+1, id 0 = embeddings: vLLM, speculators)")));
  EXPECT_THAT(ParseManifest(R"({"layer_numbering": 1, "features": {"hidden_states": [1]}})", "m"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("manifest 'm': 'layer_numbering' must be a string")));
}

TEST(LayerNumberingTest, BothNumberingsSideBySide) {
  EXPECT_EQ(BothNumberings({1, 16, 61}), "hf-layer [1, 16, 61] = vllm-capture-id [2, 17, 62]");
  EXPECT_EQ(NumberingName(LayerNumbering::kVllmCaptureId), std::string("vllm-capture-id"));
}

}  // namespace
}  // namespace dflash::data
