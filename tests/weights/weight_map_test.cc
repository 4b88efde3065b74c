#include "weights/weight_map.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/fake_tensor_source.h"
#include "test_util/status_matchers.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::FakeTensorSource;
using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A tiny drafter-shaped schema: H = 8, nh = 2, nkv = 1, d = 4, I = 16.
constexpr int64_t kH = 8, kQ = 8, kKv = 4, kD = 4, kI = 16;

std::vector<TensorSpec> LayerSpecs(int i) {
  const std::string p = "layers." + std::to_string(i) + ".";
  return {
      {p + "input_layernorm.weight", {kH}},       {p + "post_attention_layernorm.weight", {kH}},
      {p + "self_attn.q_proj.weight", {kQ, kH}},  {p + "self_attn.k_proj.weight", {kKv, kH}},
      {p + "self_attn.v_proj.weight", {kKv, kH}}, {p + "self_attn.o_proj.weight", {kH, kQ}},
      {p + "self_attn.q_norm.weight", {kD}},      {p + "self_attn.k_norm.weight", {kD}},
      {p + "mlp.gate_proj.weight", {kI, kH}},     {p + "mlp.up_proj.weight", {kI, kH}},
      {p + "mlp.down_proj.weight", {kH, kI}},
  };
}

std::vector<TensorSpec> Schema(int layers, int target_layers) {
  std::vector<TensorSpec> s = {
      {"fc.weight", {kH, target_layers * kH}}, {"hidden_norm.weight", {kH}}, {"norm.weight", {kH}}};
  for (int i = 0; i < layers; ++i) {
    for (TensorSpec& t : LayerSpecs(i)) s.push_back(t);
  }
  return s;
}

// Tensors matching a schema, deterministic values, names with `prefix`.
std::vector<std::pair<std::string, at::Tensor>> Checkpoint(const std::vector<TensorSpec>& schema,
                                                           const std::string& prefix = "",
                                                           at::ScalarType dtype = at::kFloat) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  int seed = 1;
  for (const TensorSpec& s : schema) {
    at::Tensor t = at::arange(c10::multiply_integers(s.shape), at::kFloat)
                       .reshape(s.shape)
                       .mul(0.01 * seed++)
                       .to(dtype);
    out.emplace_back(prefix + s.name, t);
  }
  return out;
}

const TensorEntry* Entry(const WeightReport& r, const std::string& name) {
  for (const TensorEntry& e : r.tensors) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

class WeightMapTest : public ::testing::Test {
 protected:
  std::vector<TensorSpec> schema_ = Schema(2, 3);
};

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

TEST_F(WeightMapTest, NanAndInfMakeReportNotOk) {
  std::vector<TensorSpec> schema = {{"norm.weight", {4}}, {"fc.weight", {2, 2}}};
  at::Tensor bad = at::ones({4});
  bad[1] = std::numeric_limits<float>::quiet_NaN();
  bad[2] = std::numeric_limits<float>::infinity();
  FakeTensorSource src({{"norm.weight", bad}, {"fc.weight", at::zeros({2, 2})}});
  ValidateOptions opts;
  opts.compute_stats = true;
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, opts));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.problems, ElementsAre("tensor 'norm.weight' holds 1 NaN and 1 Inf values"));
  const TensorEntry* n = Entry(r, "norm.weight");
  EXPECT_EQ(n->stats.nan_count, 1);
  EXPECT_EQ(n->stats.inf_count, 1);
  EXPECT_DOUBLE_EQ(n->stats.mean, 1.0);  // over the finite values
  EXPECT_FALSE(n->stats.all_zero);
  EXPECT_TRUE(Entry(r, "fc.weight")->stats.all_zero);
  EXPECT_THAT(r.facts, Contains("warning: tensor 'fc.weight' is all zeros (untrained or zeroed?)"));
}

TEST_F(WeightMapTest, StatsRefuseATensorOverTheBudgetBeforeReadingIt) {
  std::vector<TensorSpec> schema = {{"a", {4}}, {"b", {8}}};
  FakeTensorSource src({{"a", at::ones({4})}, {"b", at::ones({8})}});
  ValidateOptions opts;
  opts.compute_stats = true;
  opts.max_tensor_bytes = 16;  // a fits (16 bytes), b does not (32)
  EXPECT_THAT(ValidateWeightMap(src, schema, opts),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "tensor 'b' in '" + src.path() +
                           "' is 32 bytes; reading it for statistics would exceed the resident "
                           "budget of 16 bytes"));
  EXPECT_THAT(src.reads(), ElementsAre("a"));
  opts.max_tensor_bytes = 32;
  EXPECT_OK(ValidateWeightMap(src, schema, opts).status());
}

TEST_F(WeightMapTest, StatsValuesExact) {
  std::vector<TensorSpec> schema = {{"w", {2, 2}}};
  FakeTensorSource src({{"w", at::tensor({1.0f, -2.0f, 3.0f, 6.0f}).reshape({2, 2})}});
  ValidateOptions opts;
  opts.compute_stats = true;
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, opts));
  ASSERT_TRUE(r.ok);
  const TensorEntry* e = Entry(r, "w");
  ASSERT_TRUE(e->has_stats);
  EXPECT_DOUBLE_EQ(e->stats.mean, 2.0);
  // population variance: (1 + 16 + 1 + 16) / 4 = 8.5
  EXPECT_DOUBLE_EQ(e->stats.std, std::sqrt(8.5));
  EXPECT_DOUBLE_EQ(e->stats.abs_max, 6.0);
  EXPECT_EQ(e->stats.nan_count, 0);
  EXPECT_EQ(e->stats.inf_count, 0);
  EXPECT_FALSE(e->stats.all_zero);
  EXPECT_THAT(r.fingerprint, ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
}

TEST_F(WeightMapTest, StatsMatchTorchOnLargerTensor) {
  // Spans several chunks' worth of merge logic through a non-trivial tensor.
  at::Tensor big = at::randn({3000, 1500}, at::kFloat);
  std::vector<TensorSpec> schema = {{"w", {3000, 1500}}};
  FakeTensorSource src({{"w", big}});
  ValidateOptions opts;
  opts.compute_stats = true;
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, opts));
  const TensorStats& s = Entry(r, "w")->stats;
  at::Tensor d = big.to(at::kDouble);
  const double mean = d.mean().item<double>();
  const double std = d.std(/*unbiased=*/false).item<double>();
  EXPECT_NEAR(s.mean, mean, 1e-12) << "max-diff " << std::abs(s.mean - mean);
  EXPECT_NEAR(s.std, std, 1e-12) << "max-diff " << std::abs(s.std - std);
  EXPECT_DOUBLE_EQ(s.abs_max, d.abs().max().item<double>());
}

TEST_F(WeightMapTest, FingerprintStableAndSensitive) {
  ValidateOptions opts;
  opts.compute_stats = true;
  auto fingerprint = [&](const std::vector<std::pair<std::string, at::Tensor>>& t) {
    FakeTensorSource src(t);
    auto r = ValidateWeightMap(src, schema_, opts);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? r->fingerprint : std::string();
  };
  const std::string base = fingerprint(Checkpoint(schema_));
  EXPECT_EQ(base, fingerprint(Checkpoint(schema_)));
  // Independent of wrapper prefixes and file order.
  EXPECT_EQ(base, fingerprint(Checkpoint(schema_, "module._orig_mod.")));
  auto reversed = Checkpoint(schema_);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(base, fingerprint(reversed));
  // One changed value.
  auto changed = Checkpoint(schema_);
  changed[7].second = changed[7].second.clone();
  changed[7].second.view({-1})[3] += 1e-3;
  EXPECT_NE(base, fingerprint(changed));
  // Same values, other dtype.
  EXPECT_NE(base, fingerprint(Checkpoint(schema_, "", at::kDouble)));
  // Two same-shaped tensors swapped.
  auto swapped = Checkpoint(schema_);
  std::swap(swapped[1].second, swapped[2].second);  // hidden_norm <-> norm
  EXPECT_NE(base, fingerprint(swapped));
}

TEST_F(WeightMapTest, LoadConvertsDtypeAndFingerprints) {
  FakeTensorSource src(Checkpoint(schema_, "module.", at::kFloat));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  ASSERT_TRUE(r.ok);
  ASSERT_OK_AND_ASSIGN(auto weights,
                       LoadValidatedWeights(src, r, at::kBFloat16, c10::Device(c10::kCPU)));
  EXPECT_EQ(weights.size(), schema_.size());
  const at::Tensor& fc = weights.at("fc.weight");
  EXPECT_EQ(fc.scalar_type(), at::kBFloat16);
  EXPECT_THAT(fc.sizes().vec(), ElementsAre(kH, 3 * kH));
  at::Tensor want = Checkpoint(schema_)[0].second.to(at::kBFloat16);
  EXPECT_TRUE(at::equal(fc, want));
  EXPECT_THAT(r.fingerprint, ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
  // A load checks for NaN/Inf but computes no statistics of clean tensors.
  EXPECT_FALSE(r.tensors[0].has_stats);

  // The same fingerprint as validation with stats computes.
  ValidateOptions opts;
  opts.compute_stats = true;
  ASSERT_OK_AND_ASSIGN(WeightReport r2, ValidateWeightMap(src, schema_, opts));
  EXPECT_EQ(r2.fingerprint, r.fingerprint);
}

TEST_F(WeightMapTest, LoadOntoCuda) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  FakeTensorSource src(Checkpoint(schema_));
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  ASSERT_OK_AND_ASSIGN(auto weights,
                       LoadValidatedWeights(src, r, at::kBFloat16, c10::Device(c10::kCUDA, 0)));
  const at::Tensor& fc = weights.at("fc.weight");
  EXPECT_TRUE(fc.is_cuda());
  EXPECT_EQ(fc.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(fc.cpu(), Checkpoint(schema_)[0].second.to(at::kBFloat16)));
}

TEST_F(WeightMapTest, LoadRefusesReportThatIsNotOk) {
  auto tensors = Checkpoint(schema_);
  tensors.erase(tensors.begin());
  FakeTensorSource src(tensors);
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema_, {}));
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(LoadValidatedWeights(src, r, at::kFloat, c10::Device(c10::kCPU)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("did not validate: missing tensor 'fc.weight'")));
  EXPECT_THAT(src.reads(), IsEmpty());
}

TEST_F(WeightMapTest, LoadRefusesNanWeights) {
  std::vector<TensorSpec> schema = {{"norm.weight", {2}}};
  FakeTensorSource src({{"norm.weight", at::tensor({1.0f, NAN})}});
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
  ASSERT_TRUE(r.ok);  // no stats yet: NaN is only seen on load
  EXPECT_THAT(LoadValidatedWeights(src, r, at::kFloat, c10::Device(c10::kCPU)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'norm.weight' holds 1 NaN and 0 Inf values")));
  EXPECT_FALSE(r.ok);
}

TEST_F(WeightMapTest, LoadRefusesNonFiniteInEveryFloatDtype) {
  // The bit test runs in the stored dtype: each one's NaN and Inf patterns.
  for (const c10::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    std::vector<TensorSpec> schema = {{"a.weight", {600}}, {"b.weight", {3}}};
    at::Tensor a = at::ones({600}, dtype);
    a[517] = -std::numeric_limits<float>::infinity();  // past the first 256-element step
    at::Tensor b = at::tensor({2.0f, NAN, NAN}).to(dtype);
    FakeTensorSource src({{"a.weight", a}, {"b.weight", b}});
    ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
    ASSERT_TRUE(r.ok);
    EXPECT_THAT(LoadValidatedWeights(src, r, at::kFloat, c10::Device(c10::kCPU)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("tensor 'a.weight' holds 0 NaN and 1 Inf values")));
    EXPECT_FALSE(r.ok);
    EXPECT_THAT(r.problems, Contains("tensor 'b.weight' holds 2 NaN and 0 Inf values"));
    ASSERT_TRUE(Entry(r, "b.weight")->has_stats);
    EXPECT_DOUBLE_EQ(Entry(r, "b.weight")->stats.mean, 2.0);
  }
}

TEST_F(WeightMapTest, LoadAcceptsLargeFiniteValues) {
  // Max finite values have all exponent bits but one set: not NaN/Inf.
  std::vector<TensorSpec> schema = {{"w", {4}}};
  for (const c10::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const double big = dtype == at::kHalf ? 65504.0 : dtype == at::kDouble ? 1e308 : 3e38;
    FakeTensorSource src({{"w", at::tensor({big, -big, 0.0, 1e-30}).to(dtype)}});
    ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, {}));
    EXPECT_THAT(LoadValidatedWeights(src, r, dtype, c10::Device(c10::kCPU)), IsOk());
    EXPECT_TRUE(r.ok);
    EXPECT_FALSE(r.tensors[0].has_stats);
  }
}

TEST_F(WeightMapTest, LoadDetectsChangedCheckpoint) {
  std::vector<TensorSpec> schema = {{"norm.weight", {2}}};
  FakeTensorSource src({{"norm.weight", at::tensor({1.0f, 2.0f})}});
  ValidateOptions opts;
  opts.compute_stats = true;
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(src, schema, opts));
  FakeTensorSource changed({{"norm.weight", at::tensor({1.0f, 3.0f})}});
  EXPECT_THAT(
      LoadValidatedWeights(changed, r, at::kFloat, c10::Device(c10::kCPU)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("changed since it was validated")));
}

}  // namespace
}  // namespace dflash::weights
