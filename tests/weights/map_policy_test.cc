#include "weights/map_policy.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/torch_save_writer.h"
#include "weights/safetensors_file.h"
#include "weights/target_tensors.h"
#include "weights/torch_pt_file.h"
#include "weights/weight_map.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::TorchSaveWriter;
using ::testing::HasSubstr;

const c10::Device kCpu(c10::kCPU);

std::vector<double> Ramp(int64_t n, double scale) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<double>(i % 13 - 6);
  return v;
}

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

class MapPolicyTest : public ::testing::Test {
 public:
  // The model's shape (members, not file constants: a folder's tests
  // compile as one unity batch, cmake/unity.cmake).
  static constexpr int64_t kV = 64, kH = 16;

 protected:
  // Sets the file's mtime `seconds` into the past: a file its writer left alone.
  static void Age(const std::string& path, int seconds) {
    struct timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
  }

  // A single-file F32 target: embed, lm_head and norm, `scale` apart.
  std::string WriteTarget(const std::string& dir, double scale) {
    dir_.WriteFile(dir + "/config.json", R"({"vocab_size": 64, "hidden_size": 16})");
    SafetensorsWriter w;
    w.AddValues("model.embed_tokens.weight", "F32", {kV, kH}, Ramp(kV * kH, scale));
    w.AddValues("lm_head.weight", "F32", {kV, kH}, Ramp(kV * kH, -scale));
    w.AddValues("model.norm.weight", "F32", {kH}, Ramp(kH, scale));
    return w.WriteTo(dir_.Join(dir + "/model.safetensors"));
  }

  absl::StatusOr<TargetTensors> Load(const std::string& dir, c10::ScalarType dtype,
                                     MapPolicy policy = {}) {
    TargetLoadOptions o{dtype, kCpu, /*load_norm=*/true};
    o.map = policy;
    return LoadTargetTensors(dir_.Join(dir), o);
  }

  TempDir dir_;
};

TEST_F(MapPolicyTest, TensorsInTheResidentDtypeOfAnOldFileAreViewsOfIt) {
  Age(WriteTarget("t", 0.5), 60);
  absl::StatusOr<TargetTensors> t = Load("t", at::kFloat);
  ASSERT_THAT(t.status(), IsOk());
  const int64_t all = 2 * kV * kH * 4 + kH * 4;
  EXPECT_EQ(t->mapping.mapped_bytes(), all);
  EXPECT_EQ(t->mapping.copied_bytes(), 0);
  ASSERT_EQ(t->mapping.files().size(), 1u);
  EXPECT_EQ(t->mapping.files()[0].path, dir_.Join("t/model.safetensors"));
  EXPECT_FLOAT_EQ(t->embed[0][1].item<float>(), 0.5f * -5);
}

TEST_F(MapPolicyTest, ARecentlyModifiedFileIsCopied) {
  WriteTarget("t", 0.5);  // just written: its writer may not be done
  absl::StatusOr<TargetTensors> t = Load("t", at::kFloat);
  ASSERT_THAT(t.status(), IsOk());
  EXPECT_EQ(t->mapping.mapped_bytes(), 0);
  EXPECT_EQ(t->mapping.copied_bytes(), 2 * kV * kH * 4 + kH * 4);
  EXPECT_TRUE(t->mapping.files().empty());
}

TEST_F(MapPolicyTest, NoMmapAndOtherDtypesCopy) {
  Age(WriteTarget("t", 0.5), 60);
  absl::StatusOr<TargetTensors> off = Load("t", at::kFloat, MapPolicy{false, 0});
  ASSERT_THAT(off.status(), IsOk());
  EXPECT_EQ(off->mapping.mapped_bytes(), 0);
  absl::StatusOr<TargetTensors> bf16 = Load("t", at::kBFloat16, MapPolicy{true, 0});
  ASSERT_THAT(bf16.status(), IsOk());
  EXPECT_EQ(bf16->mapping.mapped_bytes(), 0);
  EXPECT_EQ(bf16->mapping.copied_bytes(), 2 * kV * kH * 2 + kH * 2);
  // The fingerprint is of the stored bytes, however they became resident.
  absl::StatusOr<TargetTensors> mapped = Load("t", at::kFloat, MapPolicy{true, 0});
  ASSERT_THAT(mapped.status(), IsOk());
  EXPECT_EQ(mapped->fingerprint, off->fingerprint);
  EXPECT_EQ(mapped->fingerprint, bf16->fingerprint);
}

TEST_F(MapPolicyTest, RenamingANewFileOverALoadedOneKeepsTheOldValues) {
  Age(WriteTarget("t", 0.5), 60);
  absl::StatusOr<TargetTensors> t = Load("t", at::kFloat);
  ASSERT_THAT(t.status(), IsOk());
  ASSERT_GT(t->mapping.mapped_bytes(), 0);
  const at::Tensor before = t->embed.clone();
  // The documented way to write a checkpoint: a temporary name, then rename.
  const std::string fresh = WriteTarget("new", 4.0);
  ASSERT_EQ(std::rename(fresh.c_str(), dir_.Join("t/model.safetensors").c_str()), 0);
  EXPECT_TRUE(at::equal(t->embed, before));
  EXPECT_FLOAT_EQ(t->lm_head[0][1].item<float>(), -0.5f * -5);
  EXPECT_THAT(t->mapping.CheckUnchanged(), IsOk());
  // Loading the path again reads the new file.
  absl::StatusOr<TargetTensors> again = Load("t", at::kFloat, MapPolicy{true, 0});
  ASSERT_THAT(again.status(), IsOk());
  EXPECT_FLOAT_EQ(again->embed[0][1].item<float>(), 4.0f * -5);
}

TEST_F(MapPolicyTest, AFileRewrittenInPlaceIsReportedNotRead) {
  const std::string path = WriteTarget("t", 0.5);
  Age(path, 60);
  absl::StatusOr<TargetTensors> t = Load("t", at::kFloat);
  ASSERT_THAT(t.status(), IsOk());
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);  // as torch.save does
    out << "not weights";
  }
  // Only the stamp is checked: reading t->embed now could raise SIGBUS.
  EXPECT_THAT(
      t->mapping.CheckUnchanged(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "'" + path + "' was written in place since it was loaded (" + std::to_string(size) +
                   " bytes then, 11 now); write checkpoints to a temporary name and "
                   "rename them into place, or run the server with --no-mmap"));
}

TEST_F(MapPolicyTest, MisalignedTensorsAreCopied) {
  SafetensorsWriter w;
  w.Add("odd", "U8", {1}, std::string("\x01", 1));
  w.AddValues("w", "F32", {4}, {1, 2, 3, 4});  // starts 1 byte into the data
  const std::string path = w.WriteTo(dir_.Join("m.safetensors"));
  absl::StatusOr<TensorSourcePtr> src = OpenSafetensors(path);
  ASSERT_THAT(src.status(), IsOk());
  EXPECT_FALSE((*src)->MappedStamp("w").has_value());
  EXPECT_TRUE((*src)->MappedStamp("odd").has_value());  // bytes align anywhere
  EXPECT_FALSE((*src)->MappedStamp("absent").has_value());
}

TEST_F(MapPolicyTest, StoredTorchRecordsAreViewsSmallOrUnalignedOnesCopies) {
  std::vector<float> big(1 << 15), small(8);  // 128 KiB (mapped) and 32 B (copied)
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 7);
  TorchSaveWriter w;
  w.Add("big", "FloatStorage", {256, 128}, FloatBytes(big), 4)
      .Add("small", "FloatStorage", {8}, FloatBytes(small), 4)
      .AlignRecords(64);
  const std::string path = w.WriteTo(dir_.Join("c.pt"));
  Age(path, 60);
  absl::StatusOr<TensorSourcePtr> src = OpenTorchPt(path);
  ASSERT_THAT(src.status(), IsOk());
  EXPECT_TRUE((*src)->MappedStamp("big").has_value());
  EXPECT_FALSE((*src)->MappedStamp("small").has_value());
  absl::StatusOr<at::Tensor> t = (*src)->Read("big");
  ASSERT_THAT(t.status(), IsOk());
  std::optional<FileStamp> f = MayAlias(**src, "big", *t, at::kFloat, kCpu, MapPolicy{});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->path, path);
  EXPECT_FALSE(MayAlias(**src, "big", *t, at::kFloat, c10::Device("cuda:0"), MapPolicy{}));
  EXPECT_FLOAT_EQ((*t)[1][0].item<float>(), static_cast<float>(128 % 7));
}

// A load reads each tensor's bytes once for the fingerprint and the NaN/Inf
// check (byte_scan.h): mapped or copied, the fingerprint is validate
// --stats' one, and a NaN past the first 256 KiB piece is found either way.
TEST_F(MapPolicyTest, MappedAndCopiedLoadsFingerprintAndCheckTheSameBytes) {
  const int64_t n = 100000;  // 400 KiB of F32: two pieces
  std::vector<double> values = Ramp(n, 0.25);
  auto write = [&](const std::string& name) {
    SafetensorsWriter w;
    w.AddValues("fc.weight", "F32", {n}, values);
    w.AddValues("norm.weight", "BF16", {kH}, Ramp(kH, 1.0));
    const std::string path = w.WriteTo(dir_.Join(name));
    Age(path, 60);
    return path;
  };
  const std::vector<TensorSpec> schema = {{"fc.weight", {n}}, {"norm.weight", {kH}}};
  auto load = [&](const std::string& path, c10::ScalarType dtype, MapPolicy policy,
                  std::string* fingerprint) -> absl::Status {
    absl::StatusOr<TensorSourcePtr> src = OpenSafetensors(path);
    if (!src.ok()) return src.status();
    absl::StatusOr<WeightReport> r = ValidateWeightMap(**src, schema, {});
    if (!r.ok()) return r.status();
    MapTally tally;
    absl::Status s = LoadValidatedWeights(**src, *r, dtype, kCpu, policy, &tally).status();
    *fingerprint = r->fingerprint;
    if (s.ok() && policy.enabled && dtype == at::kFloat) {
      EXPECT_EQ(tally.mapped_bytes(), n * 4);  // fc.weight is a view, norm a copy
    }
    return s;
  };
  const std::string clean = write("clean.safetensors");
  absl::StatusOr<TensorSourcePtr> src = OpenSafetensors(clean);
  ASSERT_THAT(src.status(), IsOk());
  ValidateOptions stats;
  stats.compute_stats = true;
  absl::StatusOr<WeightReport> validated = ValidateWeightMap(**src, schema, stats);
  ASSERT_THAT(validated.status(), IsOk());
  for (const MapPolicy policy : {MapPolicy{true, 0}, MapPolicy{false, 0}}) {
    for (const c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(std::string(policy.enabled ? "mapped " : "copied ") + c10::toString(dtype));
      std::string fp;
      EXPECT_THAT(load(clean, dtype, policy, &fp), IsOk());
      EXPECT_EQ(fp, validated->fingerprint);
    }
  }
  values[n - 3] = std::nan("");  // in the second piece
  const std::string bad = write("bad.safetensors");
  for (const MapPolicy policy : {MapPolicy{true, 0}, MapPolicy{false, 0}}) {
    SCOPED_TRACE(policy.enabled ? "mapped" : "copied");
    std::string fp;
    EXPECT_THAT(load(bad, at::kFloat, policy, &fp),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("tensor 'fc.weight' holds 1 NaN and 0 Inf values")));
  }
}

}  // namespace
}  // namespace dflash::weights
