// The weight map on tensor values and loading: NaN and Inf, statistics
// (exact, against torch, within the budget), the fingerprint, and
// LoadWeights converting dtypes, refusing reports that are not ok and
// non-finite weights, and detecting a changed checkpoint.
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
#include "weights/weight_map_fixture.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::FakeTensorSource;
using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::dflash::weights::testing::Checkpoint;
using ::dflash::weights::testing::Entry;
using ::dflash::weights::testing::kD;
using ::dflash::weights::testing::kH;
using ::dflash::weights::testing::kI;
using ::dflash::weights::testing::WeightMapTest;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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
