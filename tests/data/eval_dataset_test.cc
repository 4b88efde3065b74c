// EvalDataset::Load against datasets written by
// tests/fixtures/make_dataset_fixtures.py (see its docstring for the layout
// and the value formula the column checks rely on).
#include "data/eval_dataset.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/python_fixtures.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::data {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kH = 8;

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int RunPython(const std::string& args) {
  const std::string cmd = dflash::testing::BinaryFromEnv("DFLASH_FIXTURE_PY") + " " + args;
  return std::system(cmd.c_str());
}

int64_t LengthOf(int64_t sample) {
  return 12 + sample % 5;
}

// The fixture's value(sample, p, layer, c) for `layers`, as [L, K*H] float.
at::Tensor Expected(int64_t sample, const std::vector<int>& layers) {
  const int64_t L = LengthOf(sample);
  at::Tensor p = at::arange(L, at::kDouble).view({L, 1, 1});
  std::vector<double> lv(layers.begin(), layers.end());
  at::Tensor l = at::tensor(lv, at::kDouble).view({1, -1, 1});
  at::Tensor c = at::arange(kH, at::kDouble).view({1, 1, kH});
  at::Tensor v = sample * 100000.0 + p * 1000 + l * 10 + c * 0.5;
  return v.reshape({L, static_cast<int64_t>(layers.size()) * kH}).to(at::kFloat);
}

double MaxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Made by ctest's fixture step before this test (test_util/python_fixtures.h);
// shared, so read-only.
std::string FixtureRoot() {
  return testing::PythonFixtureDir("make_dataset_fixtures");
}

class EvalDatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { root_ = new std::string(FixtureRoot()); }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(root_->empty()) << "the dataset fixtures are missing; see the failure above";
  }

  static std::string Join(const std::string& sub) { return (fs::path(*root_) / sub).string(); }
  static DatasetLoadOptions Options(const std::string& sub) {
    DatasetLoadOptions o;
    o.path = Join(sub);
    return o;
  }

  static std::string* root_;
};

std::string* EvalDatasetTest::root_ = nullptr;

TEST_F(EvalDatasetTest, OrdersByFileIndexAndReadsManifest) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("dflash")));
  EXPECT_EQ(ds.name(), "fixture-dflash");
  EXPECT_EQ(ds.hidden_size(), kH);
  EXPECT_EQ(ds.dtype(), at::kFloat);
  EXPECT_THAT(ds.layer_ids(), ElementsAre(1, 16, 31, 46, 61));
  ASSERT_EQ(ds.groups().size(), 1u);
  EXPECT_EQ(ds.groups()[0].key, "hidden_states");
  ASSERT_EQ(ds.size(), 4u);
  const std::vector<int64_t> want = {0, 1, 2, 10};
  for (size_t i = 0; i < ds.size(); ++i) {
    const DatasetSample& s = ds.sample(i);
    EXPECT_EQ(s.index, want[i]);
    EXPECT_EQ(s.file, "rows_0-4/data_" + std::to_string(want[i]) + ".ckpt");
    EXPECT_EQ(s.input_ids.dim(), 1);
    EXPECT_EQ(s.input_ids.size(0), LengthOf(want[i]));
    EXPECT_EQ(s.input_ids.scalar_type(), at::kLong);
    EXPECT_EQ(s.input_ids[0].item<int64_t>(), want[i]);  // ids start at the sample
    EXPECT_EQ(s.loss_mask.scalar_type(), at::kByte);
    EXPECT_EQ(s.loss_mask.sum().item<int64_t>(), LengthOf(want[i]) - 3);
    ASSERT_EQ(s.features.size(), 1u);
    EXPECT_THAT(s.features[0].sizes(), ElementsAre(LengthOf(want[i]), 5 * kH));
  }
  EXPECT_TRUE(ds.skipped().empty());
}

TEST_F(EvalDatasetTest, MaxSamplesLimitsAfterOrdering) {
  DatasetLoadOptions o = Options("dflash");
  o.max_samples = 3;
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.sample(2).index, 2);
}

TEST_F(EvalDatasetTest, CollidingIndicesOrderByFolder) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("collide")));
  ASSERT_EQ(ds.size(), 4u);
  std::vector<int64_t> first, index;
  for (size_t i = 0; i < ds.size(); ++i) {
    first.push_back(ds.sample(i).input_ids[0].item<int64_t>());
    index.push_back(ds.sample(i).index);
  }
  EXPECT_THAT(first, ElementsAre(0, 1, 500, 501));
  EXPECT_THAT(index, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(ds.sample(2).file, "rows_5000-10000/data_0.ckpt");
}

TEST_F(EvalDatasetTest, MissingManifestSaysWhatToDeclare) {
  EXPECT_THAT(EvalDataset::Load(Options("no_manifest")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(
                           HasSubstr("does not say which target layers its features hold"),
                           HasSubstr("no_manifest/dataset.json"),
                           HasSubstr(R"("features": {"hidden_states": [1, 16, 31, 46, 61]})"))));
}

TEST_F(EvalDatasetTest, RequestLayerIdsReplaceTheManifest) {
  DatasetLoadOptions o = Options("no_manifest");
  o.layer_ids = {{"hidden_states", {1, 16, 31, 46, 61}}};
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  EXPECT_EQ(ds.name(), "no_manifest");  // the folder name
  EXPECT_EQ(ds.hidden_size(), kH);      // derived: 40 / 5
  EXPECT_EQ(ds.size(), 4u);

  o = Options("dflash");
  o.name = "renamed";
  o.layer_ids = {{"hidden_states", {2, 3, 4, 5, 6}}};
  ASSERT_OK_AND_ASSIGN(EvalDataset ds2, EvalDataset::Load(o));
  EXPECT_EQ(ds2.name(), "renamed");
  EXPECT_THAT(ds2.layer_ids(), ElementsAre(2, 3, 4, 5, 6));

  // The manifest's hidden size stands (the override names layers only):
  // 40 columns are not 4 layers x 8.
  o.layer_ids = {{"hidden_states", {1, 16, 31, 46}}};
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'hidden_states' has width 40; expected 4 layers x hidden size 8 "
                                 "= 32 (hidden_size from the manifest)")));
  // Without a manifest it is derived from the width: 40 = 4 x 10.
  DatasetLoadOptions bare = Options("no_manifest");
  bare.layer_ids = o.layer_ids;
  ASSERT_OK_AND_ASSIGN(EvalDataset ds3, EvalDataset::Load(bare));
  EXPECT_EQ(ds3.hidden_size(), 10);

  bare.layer_ids = {{"hidden_states", {1, 16, 31}}};  // 40 is not a multiple of 3
  EXPECT_THAT(EvalDataset::Load(bare),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sample 'data_0.ckpt': 'hidden_states' has "
                                 "width 40, not a positive multiple of its 3 declared "
                                 "layers [1, 16, 31]")));

  o.layer_ids = {{"hidden_states", {1, 16}}, {"hidden_state", {16}}};
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("request layer_ids: layer 16 is declared twice")));
}

// A copy of fixture `sub` in a fresh folder, with dataset.json replaced by
// `manifest` when it is not empty.
std::string CopyOf(const TempDir& dir, const std::string& from, const std::string& manifest) {
  const std::string to = dir.Join("copy");
  fs::copy(from, to, fs::copy_options::recursive);
  if (!manifest.empty()) dir.WriteFile("copy/dataset.json", manifest);
  return to;
}

TEST_F(EvalDatasetTest, RequestLayerIdsKeepTheManifestsOtherDeclarations) {
  TempDir dir;
  DatasetLoadOptions o;
  o.path = CopyOf(dir, Join("eagle"),
                  R"({"name": "eagle-final", "features": {"aux_hidden_state": [1, 16, 31, 46],)"
                  R"( "hidden_state": [61]}, "final_hidden_state": {"key": "hidden_state", )"
                  R"("norm_applied": false}})");
  o.layer_ids = {{"aux_hidden_state", {2, 17, 32, 47}}, {"hidden_state", {61}}};
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  EXPECT_THAT(ds.layer_ids(), ElementsAre(2, 17, 32, 47, 61));  // the request's
  EXPECT_EQ(ds.name(), "eagle-final");                          // the manifest's
  ASSERT_TRUE(ds.final_hidden().has_value());                   // kept, not dropped
  EXPECT_EQ(ds.final_hidden()->key, "hidden_state");
  EXPECT_TRUE(ds.sample(0).final_hidden.defined());
  // A manifest that does not parse is still an error, saying why it was read.
  dir.WriteFile("copy/dataset.json", "{\"features\": []}");
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("needs an object 'features'"),
                                        HasSubstr("(the request's layer_ids replace only the "
                                                  "manifest's features; its other fields are "
                                                  "still read)"))));
}

TEST_F(EvalDatasetTest, ReadsPerSampleMetadata) {
  TempDir dir;
  const std::string path = CopyOf(dir, Join("dflash"), "");
  dir.WriteFile("copy/sample_metadata.jsonl",
                "{\"index\": 0, \"category\": \"math\", \"language\": \"en\", "
                "\"thinking\": true}\n\n{\"index\": 10, \"category\": \"code\", "
                "\"extra\": 1}\n{\"index\": 99, \"category\": \"unloaded\"}\n");
  DatasetLoadOptions o;
  o.path = path;
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  ASSERT_EQ(ds.size(), 4u);  // samples 0, 1, 2, 10
  EXPECT_EQ(ds.sample(0).metadata.category, "math");
  EXPECT_EQ(ds.sample(0).metadata.language, "en");
  EXPECT_EQ(ds.sample(0).metadata.thinking, "on");
  EXPECT_EQ(ds.sample(1).metadata.category, "");  // not listed
  EXPECT_EQ(ds.sample(3).metadata.category, "code");
  EXPECT_EQ(ds.sample(3).metadata.thinking, "");
  dir.WriteFile("copy/sample_metadata.jsonl", "{\"index\": 0, \"thinking\": \"yes\"}\n");
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sample metadata '" + path +
                           "/sample_metadata.jsonl' line 1: 'thinking' must be true or false; "
                           "got \"yes\""));
  // A file the manifest names must exist.
  dir.WriteFile("copy/dataset.json",
                R"({"features": {"hidden_states": [1, 16, 31, 46, 61]}, "sample_metadata": )"
                R"("meta/slices.jsonl"})");
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kNotFound,
                       "sample metadata '" + path +
                           "/meta/slices.jsonl' (named by the manifest's 'sample_metadata') is "
                           "not a readable file"));
}

TEST_F(EvalDatasetTest, PathMustBeADirectoryWithSamples) {
  EXPECT_THAT(EvalDataset::Load(Options("nope")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("is not an existing directory")));
  testing::TempDir empty;
  empty.WriteFile("dataset.json", R"({"features": {"hidden_states": [1]}})");
  DatasetLoadOptions o;
  o.path = empty.path();
  EXPECT_THAT(EvalDataset::Load(o),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("holds no capture files (*.ckpt, *.pt, *.pth, *.ckpt.gz)")));
}

struct BadCase {
  const char* dir;
  const char* defect;
};

TEST_F(EvalDatasetTest, EachBadSampleIsNamed) {
  const BadCase cases[] = {
      {"bad_length", "'loss_mask' has length 12; 'input_ids' has length 13"},
      {"bad_mask", "'loss_mask' holds 2 at position 5; expected only 0 or 1"},
      {"bad_token", "'input_ids' holds token id 1000 at position 4; expected [0, 1000)"},
      {"bad_width",
       "'hidden_states' has width 36; expected 5 layers x hidden size 8 = 40 "
       "(hidden_size from the manifest)"},
      {"bad_missing", "declared feature 'hidden_states' is missing; the file holds ["},
      {"bad_dtype",
       "'hidden_states' has dtype Double; the dataset's other features "
       "are Float"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.dir);
    DatasetLoadOptions o = Options(c.dir);
    o.vocab_size = 1000;
    EXPECT_THAT(EvalDataset::Load(o),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(std::string("sample 'data_1.ckpt': ") + c.defect)));
    o.skip_bad_samples = true;
    ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
    ASSERT_EQ(ds.size(), 1u);
    EXPECT_EQ(ds.sample(0).index, 0);
    ASSERT_EQ(ds.skipped().size(), 1u);
    EXPECT_THAT(ds.skipped()[0], StartsWith(std::string("data_1.ckpt: ") + c.defect));
  }
  // Without a vocabulary size token ids are not checked.
  EXPECT_OK(EvalDataset::Load(Options("bad_token")));
}

TEST_F(EvalDatasetTest, EagleLayoutServesAllFiveLayers) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("eagle")));
  EXPECT_EQ(ds.hidden_size(), kH);  // derived: the manifest has no hidden_size
  ASSERT_EQ(ds.groups().size(), 2u);
  EXPECT_EQ(ds.groups()[0].key, "aux_hidden_state");
  EXPECT_THAT(ds.layer_ids(), ElementsAre(1, 16, 31, 46, 61));
  EXPECT_OK(ds.CheckLayers({1, 16, 31, 46, 61}));
  for (size_t i = 0; i < ds.size(); ++i) {
    const std::vector<int> want = {1, 16, 31, 46, 61};
    ASSERT_OK_AND_ASSIGN(at::Tensor f, ds.Features(i, want));
    EXPECT_THAT(f.sizes(), ElementsAre(LengthOf(i), 5 * kH));
    EXPECT_EQ(MaxDiff(f, Expected(i, want)), 0) << "sample " << i;
    // Out of order and across groups.
    const std::vector<int> mixed = {61, 16, 1};
    ASSERT_OK_AND_ASSIGN(at::Tensor g, ds.Features(i, mixed));
    EXPECT_EQ(MaxDiff(g, Expected(i, mixed)), 0) << "sample " << i;
  }
  EXPECT_THAT(ds.Features(0, {1, 16, 31, 46, 62}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("drafter needs layer 62; dataset holds [1, 16, 31, 46, 61]")));
  EXPECT_THAT(ds.CheckLayers({3, 16, 62, 3}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("drafter needs layers 3, 62; dataset holds "
                                 "[1, 16, 31, 46, 61]")));
  EXPECT_THAT(ds.Features(9, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sample 9 is out of range")));
}

TEST_F(EvalDatasetTest, FourLayerCacheRefusesFiveLayerDrafter) {
  DatasetLoadOptions o = Options("eagle");
  o.layer_ids = {{"aux_hidden_state", {1, 16, 31, 46}}};
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  EXPECT_THAT(ds.CheckLayers({1, 16, 31, 46, 61}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("drafter needs layer 61; dataset holds [1, 16, 31, 46]")));
}

TEST_F(EvalDatasetTest, FeaturesAreViewsWhenColumnsAreContiguous) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("dflash")));
  const at::Tensor& stored = ds.sample(1).features[0];
  ASSERT_OK_AND_ASSIGN(at::Tensor all, ds.Features(1, {1, 16, 31, 46, 61}));
  EXPECT_EQ(all.data_ptr(), stored.data_ptr());
  ASSERT_OK_AND_ASSIGN(at::Tensor mid, ds.Features(1, {16, 31}));
  EXPECT_EQ(static_cast<char*>(mid.data_ptr()),
            static_cast<char*>(stored.data_ptr()) + kH * sizeof(float));
  EXPECT_EQ(MaxDiff(mid, Expected(1, {16, 31})), 0);
  ASSERT_OK_AND_ASSIGN(at::Tensor rev, ds.Features(1, {61, 1}));
  EXPECT_EQ(MaxDiff(rev, Expected(1, {61, 1})), 0);
}

TEST_F(EvalDatasetTest, BatchedShapesAndBoolMask) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("batched")));
  ASSERT_EQ(ds.size(), 2u);
  for (size_t i = 0; i < ds.size(); ++i) {
    EXPECT_EQ(ds.sample(i).input_ids.dim(), 1);
    EXPECT_EQ(ds.sample(i).loss_mask.scalar_type(), at::kByte);
    EXPECT_EQ(ds.sample(i).loss_mask.max().item<int>(), 1);
    EXPECT_THAT(ds.sample(i).features[0].sizes(), ElementsAre(LengthOf(i), 5 * kH));
    ASSERT_OK_AND_ASSIGN(at::Tensor f, ds.Features(i, {1, 16, 31, 46, 61}));
    EXPECT_EQ(MaxDiff(f, Expected(i, {1, 16, 31, 46, 61})), 0);
  }
}

TEST_F(EvalDatasetTest, GzipSamplesMatchPlainOnes) {
  ASSERT_OK_AND_ASSIGN(EvalDataset gz, EvalDataset::Load(Options("gz")));
  DatasetLoadOptions o = Options("dflash");
  o.max_samples = 2;
  ASSERT_OK_AND_ASSIGN(EvalDataset plain, EvalDataset::Load(o));
  ASSERT_EQ(gz.size(), 2u);
  EXPECT_EQ(gz.sample(1).file, "data_1.ckpt.gz");
  // Same content, same layers: same fingerprint, whatever the file format.
  EXPECT_EQ(gz.fingerprint(), plain.fingerprint());
  EXPECT_EQ(gz.bytes(), plain.bytes());
}

TEST_F(EvalDatasetTest, Bf16StaysBf16UnlessConverted) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("bf16")));
  EXPECT_EQ(ds.dtype(), at::kBFloat16);
  EXPECT_EQ(ds.sample(0).features[0].scalar_type(), at::kBFloat16);
  const int64_t L0 = LengthOf(0), L1 = LengthOf(1);
  EXPECT_EQ(ds.bytes(), (L0 + L1) * (8 + 1 + 5 * kH * 2));
  ASSERT_OK_AND_ASSIGN(at::Tensor f, ds.Features(1, {16}));
  EXPECT_EQ(f.scalar_type(), at::kBFloat16);
  EXPECT_EQ(f[0][0].item<float>(), 1 * kH + 1);  // column 8 + sample 1

  DatasetLoadOptions o = Options("bf16");
  o.dtype = at::kFloat;
  ASSERT_OK_AND_ASSIGN(EvalDataset f32, EvalDataset::Load(o));
  EXPECT_EQ(f32.dtype(), at::kFloat);
  EXPECT_EQ(f32.sample(0).features[0].scalar_type(), at::kFloat);
  EXPECT_EQ(f32.bytes(), (L0 + L1) * (8 + 1 + 5 * kH * 4));
  EXPECT_NE(f32.fingerprint(), ds.fingerprint());
}

TEST_F(EvalDatasetTest, BytesCountResidentTensors) {
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(Options("dflash")));
  // Lengths 12, 13, 14, 12 (samples 0, 1, 2, 10): int64 ids, uint8 mask,
  // fp32 [L, 40] features.
  EXPECT_EQ(ds.bytes(), (12 + 13 + 14 + 12) * (8 + 1 + 40 * 4));
}

TEST_F(EvalDatasetTest, FingerprintIsStableAndSeesEveryValue) {
  ASSERT_OK_AND_ASSIGN(EvalDataset a, EvalDataset::Load(Options("dflash")));
  ASSERT_OK_AND_ASSIGN(EvalDataset b, EvalDataset::Load(Options("dflash")));
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_THAT(a.fingerprint(), ::testing::MatchesRegex("h64:[0-9a-f]{16}"));

  // Same files, other layer ids: another fingerprint.
  DatasetLoadOptions o = Options("dflash");
  o.layer_ids = {{"hidden_states", {2, 16, 31, 46, 61}}};
  ASSERT_OK_AND_ASSIGN(EvalDataset relabeled, EvalDataset::Load(o));
  EXPECT_NE(relabeled.fingerprint(), a.fingerprint());

  // One feature value changed in a copy of the dataset.
  testing::TempDir copy;
  fs::copy(Join("dflash"), copy.path(), fs::copy_options::recursive);
  const std::string file = copy.Join("rows_0-4/data_10.ckpt");
  ASSERT_EQ(RunPython("-c \"import torch,sys; p=sys.argv[1]; d=torch.load(p); "
                      "d['hidden_states'][3, 5] += 1; torch.save(d, p)\" " +
                      file),
            0);
  DatasetLoadOptions oc;
  oc.path = copy.path();
  ASSERT_OK_AND_ASSIGN(EvalDataset changed, EvalDataset::Load(oc));
  EXPECT_NE(changed.fingerprint(), a.fingerprint());

  // One mask bit changed.
  ASSERT_EQ(RunPython("-c \"import torch,sys; p=sys.argv[1]; d=torch.load(p); "
                      "d['hidden_states'][3, 5] -= 1; d['loss_mask'][0] = 1; "
                      "torch.save(d, p)\" " +
                      file),
            0);
  ASSERT_OK_AND_ASSIGN(EvalDataset mask_changed, EvalDataset::Load(oc));
  EXPECT_NE(mask_changed.fingerprint(), a.fingerprint());
  EXPECT_NE(mask_changed.fingerprint(), changed.fingerprint());
}

TEST_F(EvalDatasetTest, ResidentOnCudaWhenAvailable) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  DatasetLoadOptions o = Options("eagle");
  o.device = c10::Device(c10::kCUDA, 0);
  ASSERT_OK_AND_ASSIGN(EvalDataset ds, EvalDataset::Load(o));
  EXPECT_TRUE(ds.sample(0).input_ids.is_cuda());
  EXPECT_TRUE(ds.sample(0).loss_mask.is_cuda());
  EXPECT_TRUE(ds.sample(0).features[1].is_cuda());
  ASSERT_OK_AND_ASSIGN(at::Tensor f, ds.Features(0, {1, 16, 31, 46, 61}));
  EXPECT_TRUE(f.is_cuda());
  EXPECT_EQ(MaxDiff(f.cpu(), Expected(0, {1, 16, 31, 46, 61})), 0);
  ASSERT_OK_AND_ASSIGN(EvalDataset cpu, EvalDataset::Load(Options("eagle")));
  EXPECT_EQ(ds.fingerprint(), cpu.fingerprint());
}

}  // namespace
}  // namespace dflash::data
