// Reading a report's FOUND tensors: the order they are fingerprinted in,
// the shape re-check (exact message), statistics only where asked and not
// for index tables, the problem and warning lines, and the budget refusal.
#include "weights/weight_digest.h"

#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/fake_tensor_source.h"
#include "test_util/status_matchers.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::FakeTensorSource;
using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TensorEntry Found(const std::string& name, const std::string& stored, std::vector<int64_t> shape) {
  TensorEntry e;
  e.name = name;
  e.stored_name = stored;
  e.dtype = "F32";
  e.shape = std::move(shape);
  return e;
}

TEST(WeightDigestTest, StoredAsNamesOnlyARenamedTensor) {
  EXPECT_EQ(StoredAs(Found("fc.weight", "fc.weight", {})), "");
  EXPECT_EQ(StoredAs(Found("fc.weight", "module.fc.weight", {})),
            " (stored as 'module.fc.weight')");
}

TEST(WeightDigestTest, FoundSortedBySchemaName) {
  WeightReport r;
  r.tensors = {Found("b", "b", {}), Found("a", "z", {}), Found("c", "c", {})};
  r.tensors[2].status = EntryStatus::kMissing;
  const std::vector<TensorEntry*> f = FoundSorted(r);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0]->name, "a");
  EXPECT_EQ(f[1]->name, "b");
}

TEST(WeightDigestTest, ShapeChangedSinceValidationIsRefused) {
  FakeTensorSource src({{"module.w", at::ones({2, 3})}});
  TensorEntry e = Found("w", "module.w", {3, 2});
  Fingerprinter fp;
  EXPECT_THAT(ReadAndDigest(src, e, DigestStats::kCompute, fp),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "tensor 'module.w' now has shape [2, 3]; it had [3, 2] when validated "
                       "(file changed?)"));
  EXPECT_FALSE(e.has_stats);
}

TEST(WeightDigestTest, StatsOnlyWhenAskedAndNotForIndexTables) {
  FakeTensorSource src({{"w", at::tensor({1.0f, 3.0f})}, {"d2t", at::ones({2}, at::kLong)}});
  Fingerprinter fp;
  TensorEntry w = Found("w", "w", {2});
  ASSERT_OK_AND_ASSIGN(at::Tensor t, ReadAndDigest(src, w, DigestStats::kSkip, fp));
  EXPECT_TRUE(at::equal(t, at::tensor({1.0f, 3.0f})));
  EXPECT_FALSE(w.has_stats);
  ASSERT_OK_AND_ASSIGN(t, ReadAndDigest(src, w, DigestStats::kCompute, fp));
  EXPECT_TRUE(w.has_stats);
  EXPECT_DOUBLE_EQ(w.stats.mean, 2.0);
  TensorEntry d = Found("d2t", "d2t", {2});
  d.keep_dtype = true;
  ASSERT_OK_AND_ASSIGN(t, ReadAndDigest(src, d, DigestStats::kCompute, fp));
  EXPECT_FALSE(d.has_stats);
}

// The same tensors give the same fingerprint; a changed value another.
TEST(WeightDigestTest, FingerprintFollowsTheBytes) {
  const auto print = [](const at::Tensor& w) {
    FakeTensorSource src({{"w", w}});
    WeightReport r;
    r.tensors = {Found("w", "w", {2})};
    std::vector<std::string> bad;
    EXPECT_OK(ComputeStatsAndFingerprint(src, 0, &r, &bad));
    return r.fingerprint;
  };
  const std::string a = print(at::tensor({1.0f, 2.0f}));
  EXPECT_THAT(a, ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
  EXPECT_EQ(print(at::tensor({1.0f, 2.0f})), a);
  EXPECT_NE(print(at::tensor({1.0f, 2.5f})), a);
}

TEST(WeightDigestTest, NonFiniteAndZeroTensorsAreReported) {
  at::Tensor bad = at::ones({3});
  bad[0] = std::numeric_limits<float>::quiet_NaN();
  bad[1] = std::numeric_limits<float>::infinity();
  FakeTensorSource src({{"module.n", bad}, {"z", at::zeros({2})}});
  WeightReport r;
  r.tensors = {Found("n", "module.n", {3}), Found("z", "z", {2})};
  std::vector<std::string> lines;
  ASSERT_OK(ComputeStatsAndFingerprint(src, 0, &r, &lines));
  EXPECT_THAT(lines, ElementsAre("tensor 'n' (stored as 'module.n') holds 1 NaN and 1 Inf values"));
  EXPECT_THAT(r.facts, ElementsAre("warning: tensor 'z' is all zeros (untrained or zeroed?)"));
}

TEST(WeightDigestTest, ReportStatsSkipsEntriesWithoutStats) {
  WeightReport r;
  r.tensors = {Found("z", "z", {2})};
  r.tensors[0].stats.all_zero = true;  // has_stats false: not read
  std::vector<std::string> lines;
  ReportStats(r, FoundSorted(r), &lines);
  EXPECT_THAT(lines, IsEmpty());
  EXPECT_THAT(r.facts, IsEmpty());
}

TEST(WeightDigestTest, TensorOverTheBudgetIsRefusedBeforeReading) {
  FakeTensorSource src({{"a", at::ones({4})}, {"b", at::ones({8})}});
  WeightReport r;
  r.tensors = {Found("a", "a", {4}), Found("b", "b", {8})};
  std::vector<std::string> lines;
  EXPECT_THAT(ComputeStatsAndFingerprint(src, 16, &r, &lines),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "tensor 'b' in 'fake://checkpoint' is 32 bytes; reading it for statistics "
                       "would exceed the resident budget of 16 bytes"));
  EXPECT_THAT(src.reads(), ElementsAre("a"));
  EXPECT_TRUE(r.fingerprint.empty());
}

}  // namespace
}  // namespace dflash::weights
