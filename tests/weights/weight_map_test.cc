// ValidateWeightMap matching a checkpoint's names and shapes to a schema:
// exact names, stripped prefixes and FSDP segments, missing, extra,
// transposed and wrongly typed tensors, unexpected and ignored names,
// optional tensors, and the problems ordered worst first.
#include "weights/weight_map.h"

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/fake_tensor_source.h"
#include "test_util/status_matchers.h"
#include "weights/weight_map_fixture.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::FakeTensorSource;
using ::dflash::testing::IsOk;
using ::dflash::weights::testing::Checkpoint;
using ::dflash::weights::testing::Entry;
using ::dflash::weights::testing::kD;
using ::dflash::weights::testing::kH;
using ::dflash::weights::testing::kI;
using ::dflash::weights::testing::kQ;
using ::dflash::weights::testing::Schema;
using ::dflash::weights::testing::WeightMapTest;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

TEST_F(WeightMapTest, ZlabNamesMatchExactly) {
  FakeTensorSource src(Checkpoint(schema_));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_TRUE(r.ok);
  EXPECT_THAT(r.problems, IsEmpty());
  EXPECT_EQ(r.found, static_cast<int>(schema_.size()));
  EXPECT_EQ(r.missing + r.shape_mismatches + r.unexpected + r.ignored, 0);
  EXPECT_EQ(r.stripped_prefix, "");
  EXPECT_EQ(r.format, "fake");
  const TensorEntry* fc = Entry(r, "fc.weight");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->status, EntryStatus::kFound);
  EXPECT_EQ(fc->dtype, "F32");
  EXPECT_THAT(fc->shape, ElementsAre(kH, 3 * kH));
  EXPECT_EQ(fc->source_file, "fake://checkpoint/fc.weight");
  int64_t bytes = 0;
  for (const TensorSpec& s : schema_) bytes += 4 * c10::multiply_integers(s.shape);
  EXPECT_EQ(r.tensor_bytes, bytes);
  EXPECT_THAT(r.facts, Contains(HasSubstr("found 25, missing 0")));
  EXPECT_TRUE(r.fingerprint.empty());  // only with stats or on load
}

TEST_F(WeightMapTest, StripsModulePrefixAndReportsIt) {
  FakeTensorSource src(Checkpoint(schema_, "module."));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.stripped_prefix, "module.");
  EXPECT_EQ(Entry(r, "fc.weight")->stored_name, "module.fc.weight");
  EXPECT_THAT(r.facts, Contains(HasSubstr("stripped wrapper prefix 'module.' from 25 of 25")));
}

TEST_F(WeightMapTest, StripsCombinedPrefixes) {
  for (const std::string prefix :
       {"module._orig_mod.", "_orig_mod.module.", "_fsdp_wrapped_module.", "draft_model.", "model.",
        "module.draft_model."}) {
    FakeTensorSource src(Checkpoint(schema_, prefix));
    ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
    EXPECT_TRUE(r.ok) << prefix << ": " << ::testing::PrintToString(r.problems);
    EXPECT_EQ(r.stripped_prefix, prefix);
  }
}

TEST_F(WeightMapTest, DropsFsdpSegmentsInsideNames) {
  auto tensors = Checkpoint(schema_, "_fsdp_wrapped_module.");
  for (auto& [name, t] : tensors) {
    const std::string layers = "layers.";
    size_t pos = name.find(layers);
    if (pos != std::string::npos) {
      size_t dot = name.find('.', pos + layers.size());
      name.insert(dot + 1, "_fsdp_wrapped_module.");
    }
  }
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(Entry(r, "layers.1.mlp.up_proj.weight")->stored_name,
            "_fsdp_wrapped_module.layers.1._fsdp_wrapped_module.mlp.up_proj.weight");
}

TEST_F(WeightMapTest, DoesNotStripWhenNamesAlreadyMatch) {
  // A schema whose own names start with "model." must not lose it.
  std::vector<TensorSpec> schema = {{"model.norm.weight", {kH}}, {"model.fc.weight", {kH, kH}}};
  FakeTensorSource src(Checkpoint(schema));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.stripped_prefix, "");
  EXPECT_THAT(r.facts, Not(Contains(HasSubstr("stripped"))));
}

TEST_F(WeightMapTest, AmbiguousAfterStrippingIsNotOk) {
  auto tensors = Checkpoint(schema_, "module.");
  tensors.emplace_back("fc.weight", at::zeros({kH, 3 * kH}));
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.problems,
              Contains(HasSubstr("tensors 'module.fc.weight' and 'fc.weight' both read as "
                                 "'fc.weight'")));
}

TEST_F(WeightMapTest, MissingLayerTensor) {
  auto tensors = Checkpoint(schema_);
  tensors.erase(tensors.begin() + 5);  // layers.0.self_attn.q_proj.weight
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.missing, 1);
  EXPECT_EQ(Entry(r, "layers.0.self_attn.q_proj.weight")->status, EntryStatus::kMissing);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_THAT(r.problems[0],
              AllOf(HasSubstr("missing tensor 'layers.0.self_attn.q_proj.weight' [8, 8]"),
                    HasSubstr("nearest present: 'layers.1.self_attn.q_proj.weight'")));
}

TEST_F(WeightMapTest, MissingWholeLayerIsOneLine) {
  std::vector<TensorSpec> schema = Schema(3, 3);
  FakeTensorSource src(Checkpoint(Schema(2, 3)));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.missing, 11);
  EXPECT_THAT(r.problems, ElementsAre("missing all 11 tensors of layer 2 ('layers.2.*'); the "
                                      "checkpoint has 2 layers (0..1)"));
}

TEST_F(WeightMapTest, ExtraLayerNamedClearly) {
  std::vector<TensorSpec> five = Schema(5, 3);
  FakeTensorSource src(Checkpoint(Schema(6, 3)));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, five, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.unexpected, 11);
  EXPECT_THAT(r.problems,
              ElementsAre("unexpected: 11 tensors of layer 5 ('layers.5.*'); the schema "
                          "has 5 layers (0..4): does num_hidden_layers in the config "
                          "match the checkpoint?"));
  const TensorEntry* e = Entry(r, "layers.5.mlp.up_proj.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->status, EntryStatus::kUnexpected);
  EXPECT_THAT(e->reason, HasSubstr("layer 5 is not in the schema, which has 5 layers (0..4)"));
}

TEST_F(WeightMapTest, TransposedShape) {
  auto tensors = Checkpoint(schema_);
  for (auto& [name, t] : tensors) {
    if (name == "layers.1.mlp.down_proj.weight") t = t.t().contiguous();
  }
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.shape_mismatches, 1);
  EXPECT_THAT(r.problems, ElementsAre("tensor 'layers.1.mlp.down_proj.weight' has shape [16, 8]; "
                                      "expected [8, 16]; looks transposed"));
  const TensorEntry* e = Entry(r, "layers.1.mlp.down_proj.weight");
  EXPECT_EQ(e->status, EntryStatus::kShapeMismatch);
  EXPECT_THAT(e->expected_shape, ElementsAre(kH, kI));
  EXPECT_THAT(e->shape, ElementsAre(kI, kH));
}

TEST_F(WeightMapTest, FcForFiveTargetLayersOnFourLayerSchema) {
  std::vector<TensorSpec> schema = {{"fc.weight", {kH, 4 * kH}}, {"norm.weight", {kH}}};
  FakeTensorSource src(
      {{"module.fc.weight", at::zeros({kH, 5 * kH})}, {"module.norm.weight", at::ones({kH})}});
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.problems,
              ElementsAre("tensor 'fc.weight' (stored as 'module.fc.weight') has shape "
                          "[8, 40]; expected [8, 32]; dim 1 is 40, expected 32 (ratio 5/4)"));
}

TEST_F(WeightMapTest, IntegerDtypeIsADtypeMismatch) {
  std::vector<TensorSpec> schema = {{"norm.weight", {kH}}};
  FakeTensorSource src({{"norm.weight", at::ones({kH}, at::kLong)}});
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.problems, ElementsAre("tensor 'norm.weight' has dtype I64; expected a "
                                      "floating-point type"));
  // Its own kind, not a shape mismatch.
  EXPECT_EQ(r.dtype_mismatches, 1);
  EXPECT_EQ(r.shape_mismatches, 0);
  EXPECT_EQ(Entry(r, "norm.weight")->status, EntryStatus::kDtypeMismatch);
}

TEST_F(WeightMapTest, UnexpectedUnlessAllowed) {
  auto tensors = Checkpoint(schema_);
  tensors.emplace_back("embed_tokens.weight", at::zeros({32, kH}));
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport strict, ValidateWeightMap(src, schema_, {}));
  EXPECT_FALSE(strict.ok);
  EXPECT_EQ(strict.unexpected, 1);
  ASSERT_EQ(strict.problems.size(), 1u);
  EXPECT_THAT(strict.problems[0],
              HasSubstr("unexpected tensor 'embed_tokens.weight' [32, 8]: not in the "
                        "schema; nearest schema names: "));
  EXPECT_EQ(Entry(strict, "embed_tokens.weight")->status, EntryStatus::kUnexpected);

  ValidateOptions allow;
  allow.allow_unexpected = true;
  ASSERT_OK_AND_ASSIGN(WeightReport lax, ValidateWeightMap(src, schema_, allow));
  EXPECT_TRUE(lax.ok);
  EXPECT_EQ(lax.unexpected, 1);
  EXPECT_THAT(lax.problems, IsEmpty());
  EXPECT_THAT(lax.facts, Contains(HasSubstr("allowed: unexpected tensor 'embed_tokens.weight'")));
}

TEST_F(WeightMapTest, IgnoredWithReason) {
  auto tensors = Checkpoint(schema_, "module.");
  tensors.emplace_back("module.embed_tokens.weight", at::zeros({32, kH}));
  FakeTensorSource src(tensors, {"optimizer.state", "step"});
  ValidateOptions opts;
  opts.ignore = {{"embed_tokens.weight", "the drafter borrows the target's embed_tokens"}};
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, opts));
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.ignored, 1);
  const TensorEntry* e = Entry(r, "embed_tokens.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->status, EntryStatus::kIgnored);
  EXPECT_EQ(e->stored_name, "module.embed_tokens.weight");
  EXPECT_EQ(e->reason, "the drafter borrows the target's embed_tokens");
  EXPECT_THAT(r.skipped_entries, ElementsAre("optimizer.state", "step"));
  EXPECT_THAT(r.facts,
              Contains(HasSubstr("skipped 2 non-tensor entries ('optimizer.state', 'step')")));
}

TEST_F(WeightMapTest, OptionalAbsentIsOk) {
  std::vector<TensorSpec> schema = schema_;
  schema.push_back({"layers.0.self_attn.q_proj.bias", {kQ}, /*required=*/false});
  FakeTensorSource src(Checkpoint(schema_));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(Entry(r, "layers.0.self_attn.q_proj.bias")->status, EntryStatus::kOptionalAbsent);
}

TEST_F(WeightMapTest, ProblemsOrderedWorstFirst) {
  auto tensors = Checkpoint(schema_);
  tensors.erase(tensors.begin());  // fc.weight missing
  for (auto& [name, t] : tensors) {
    if (name == "norm.weight") t = at::ones({kH + 1});
  }
  tensors.emplace_back("extra.weight", at::ones({2}));
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_THAT(r.problems[0], HasSubstr("missing tensor 'fc.weight'"));
  EXPECT_THAT(r.problems[1], HasSubstr("tensor 'norm.weight' has shape [9]; expected [8]"));
  EXPECT_THAT(r.problems[2], HasSubstr("unexpected tensor 'extra.weight'"));
}

}  // namespace
}  // namespace dflash::weights
