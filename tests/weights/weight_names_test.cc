// The stored-name handling behind ValidateWeightMap: undoing training
// wrappers, choosing the reading that finds most schema names (ties to the
// one that strips least), layer indices and the layer-range wording.
#include "weights/weight_names.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::weights {
namespace {

std::vector<TensorInfo> Stored(const std::vector<std::string>& names) {
  std::vector<TensorInfo> out;
  for (const std::string& n : names) out.push_back(TensorInfo{n});
  return out;
}

std::vector<TensorSpec> Schema(const std::vector<std::string>& names) {
  std::vector<TensorSpec> out;
  for (const std::string& n : names) out.push_back(TensorSpec{n});
  return out;
}

TEST(WeightNamesTest, NormaliseStripsThePrefixAndInfixWrappers) {
  EXPECT_EQ(Normalise("module.fc.weight", {"module.", false}), "fc.weight");
  EXPECT_EQ(Normalise("fc.weight", {"module.", false}), "fc.weight");  // no prefix: kept
  EXPECT_EQ(Normalise("module.layers.0._fsdp_wrapped_module._checkpoint_wrapped_module.w",
                      {"module.", true}),
            "layers.0.w");
  // Without drop_infix the segments stay; only whole segments are dropped.
  EXPECT_EQ(Normalise("layers.0._fsdp_wrapped_module.w", {"", false}),
            "layers.0._fsdp_wrapped_module.w");
  EXPECT_EQ(Normalise("layers.0.x_fsdp_wrapped_module.w", {"", true}),
            "layers.0.x_fsdp_wrapped_module.w");
}

TEST(WeightNamesTest, ChoosesTheNestedPrefixThatFindsTheSchema) {
  const Normalisation n =
      ChooseNormalisation(Stored({"_orig_mod.module.fc.weight", "_orig_mod.module.norm.weight"}),
                          Schema({"fc.weight", "norm.weight"}));
  EXPECT_EQ(n.prefix, "_orig_mod.module.");
  EXPECT_FALSE(n.drop_infix);
}

TEST(WeightNamesTest, NamesThatMatchStayUntouched) {
  // "model.fc.weight" is itself a schema name: stripping "model." finds
  // "fc.weight" too, an equal count, so the cheaper empty prefix wins.
  const Normalisation n =
      ChooseNormalisation(Stored({"model.fc.weight", "fc.weight"}), Schema({"model.fc.weight"}));
  EXPECT_EQ(n.prefix, "");
  EXPECT_FALSE(n.drop_infix);
}

TEST(WeightNamesTest, InfixWrappersAreDroppedWhenThatFindsMore) {
  const Normalisation n = ChooseNormalisation(
      Stored({"module.layers.0._fsdp_wrapped_module.mlp.weight"}), Schema({"layers.0.mlp.weight"}));
  EXPECT_EQ(n.prefix, "module.");
  EXPECT_TRUE(n.drop_infix);
}

TEST(WeightNamesTest, AliasesCountAsMatches) {
  TensorSpec spec{"codebook"};
  spec.aliases = {"codebook.weight"};
  const Normalisation n = ChooseNormalisation(Stored({"draft_model.codebook.weight"}), {spec});
  EXPECT_EQ(n.prefix, "draft_model.");
}

TEST(WeightNamesTest, SplitLayerReadsTheIndex) {
  int layer = -1;
  std::string rest;
  ASSERT_TRUE(SplitLayer("layers.12.mlp.up_proj.weight", &layer, &rest));
  EXPECT_EQ(layer, 12);
  EXPECT_EQ(rest, "mlp.up_proj.weight");
  ASSERT_TRUE(SplitLayer("model.layers.3.x", &layer, &rest));
  EXPECT_EQ(layer, 3);
  EXPECT_EQ(rest, "x");
  // "layers." inside another segment is skipped for a later whole one.
  ASSERT_TRUE(SplitLayer("sublayers.1.layers.4.y", &layer, &rest));
  EXPECT_EQ(layer, 4);
  EXPECT_EQ(rest, "y");
  EXPECT_FALSE(SplitLayer("norm.weight", &layer, &rest));
  EXPECT_FALSE(SplitLayer("layers.7", &layer, &rest));  // no name after the index
  EXPECT_FALSE(SplitLayer("layers.x.weight", &layer, &rest));
  EXPECT_FALSE(SplitLayer("sublayers.1.w", &layer, &rest));
}

TEST(WeightNamesTest, LayerRangeWording) {
  EXPECT_EQ(LayerRange({}), "no layers");
  EXPECT_EQ(LayerRange({0, 1, 2, 3, 4}), "5 layers (0..4)");
  EXPECT_EQ(LayerRange({6}), "1 layers (6..6)");
  EXPECT_EQ(LayerRange({0, 2, 7}), "3 layers (0, 2, 7)");
}

}  // namespace
}  // namespace dflash::weights
