#include "weights/torch_pt_file.h"
#include "weights/weight_map.h"

#include <ATen/ATen.h>

#include <sys/resource.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/python_fixtures.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::ReadFileOrEmpty;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class TorchPtFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(dflash::testing::PythonFixtureDir("make_pt_fixtures"));
    fixture_rc_ = dir_->empty() ? 1 : 0;
    if (fixture_rc_ == 0) {
      expected_ =
          new nlohmann::json(nlohmann::json::parse(ReadFileOrEmpty(*dir_ + "/expected.json")));
    }
  }
  static void TearDownTestSuite() {
    delete expected_;
    delete dir_;
    expected_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(fixture_rc_, 0) << "fixture files missing; see the failure above";
  }

  static std::string Path(const std::string& f) { return *dir_ + "/" + f; }

  // Opens `file` and checks names (in order), dtypes, shapes and exact values
  // against the sidecar written by the fixture script.
  static void CheckAgainstSidecar(const std::string& file) {
    SCOPED_TRACE(file);
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path(file)));
    const nlohmann::json& want = (*expected_)[file];
    EXPECT_EQ(src->names(), want["names"].get<std::vector<std::string>>());
    EXPECT_EQ(src->format(), "torch-zip");
    EXPECT_EQ(src->path(), Path(file));
    for (const TensorInfo& info : src->tensors()) {
      SCOPED_TRACE(info.name);
      const nlohmann::json& w = want["tensors"][info.name];
      EXPECT_EQ(info.file, Path(file));
      EXPECT_EQ(formats::DTypeName(info.dtype), w["dtype"].get<std::string>());
      EXPECT_EQ(info.shape, w["shape"].get<std::vector<int64_t>>());
      int64_t numel = 1;
      for (int64_t d : info.shape) numel *= d;
      EXPECT_EQ(info.nbytes, numel * formats::DTypeSize(info.dtype));

      ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read(info.name));
      EXPECT_TRUE(t.is_contiguous());
      EXPECT_EQ(t.sizes().vec(), info.shape);
      EXPECT_EQ(t.element_size(), formats::DTypeSize(info.dtype));
      ASSERT_EQ(t.numel(), static_cast<int64_t>(w["values"].size()));
      if (formats::IsFloatingPoint(info.dtype)) {
        auto got = t.to(at::kDouble).contiguous();
        auto exp = w["values"].get<std::vector<double>>();
        double max_diff = 0;
        for (int64_t i = 0; i < t.numel(); ++i) {
          max_diff = std::max(max_diff, std::abs(got.data_ptr<double>()[i] - exp[i]));
        }
        EXPECT_EQ(max_diff, 0.0) << "max-diff vs torch.save values";
      } else {
        auto got = t.to(at::kLong).contiguous();
        auto exp = w["values"].get<std::vector<int64_t>>();
        std::vector<int64_t> v(got.data_ptr<int64_t>(), got.data_ptr<int64_t>() + t.numel());
        EXPECT_EQ(v, exp);
      }
    }
  }

  // Plain state dicts and a training checkpoint's extras.
  void ReadsPlainFixtures() {
    {
      SCOPED_TRACE("PlainStateDict");
      CheckAgainstSidecar("plain.pt");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("plain.pt")));
      EXPECT_THAT(src->skipped_entries(),
                  IsEmpty());  // _metadata (BUILD) is dropped
      EXPECT_NE(src->Find("fc.weight"), nullptr);
      EXPECT_EQ(src->Find("empty")->nbytes, 0);
    }
    {
      SCOPED_TRACE("SingleItemDict");
      CheckAgainstSidecar("single.pt");
    }
    {
      SCOPED_TRACE("TrainingCheckpointSkipsOptimizerAndStep");
      CheckAgainstSidecar("train.pt");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("train.pt")));
      EXPECT_THAT(src->skipped_entries(),
                  ElementsAre("optimizer (optimizer state with 6 tensors, not model weights)",
                              "step (int)"));
    }
  }

  // Training wrappers: unwrapped, named in the report, refused when mixed.
  void ReadsWrappedFixtures() {
    {
      SCOPED_TRACE("WrappedStateDictIsUnwrapped");
      CheckAgainstSidecar("wrapped.pt");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("wrapped.pt")));
      EXPECT_EQ(src->unwrapped_wrapper(), "state_dict");
      EXPECT_THAT(src->skipped_entries(), IsEmpty());
    }
    {
      SCOPED_TRACE("TrainingWrappersWithSiblings");
      for (const auto& [file, wrapper] : std::vector<std::pair<std::string, std::string>>{
               {"lightning.pt", "state_dict"},
               {"deepspeed.pt", "module"},
               {"model_state_dict.pt", "model_state_dict"}}) {
        SCOPED_TRACE(file);
        CheckAgainstSidecar(file);
        ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path(file)));
        EXPECT_EQ(src->unwrapped_wrapper(), wrapper);
      }
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("lightning.pt")));
      EXPECT_THAT(src->skipped_entries(),
                  ElementsAre("epoch (int)", "global_step (int)",
                              "optimizer_states.0 (optimizer state with 6 tensors, not model "
                              "weights)",
                              "hyper_parameters (dict, not a tensor)"));
      ASSERT_OK_AND_ASSIGN(src, OpenTorchPt(Path("deepspeed.pt")));
      EXPECT_THAT(src->skipped_entries(), ElementsAre("iteration (int)"));
      // The plain state dict names no wrapper.
      ASSERT_OK_AND_ASSIGN(src, OpenTorchPt(Path("plain.pt")));
      EXPECT_EQ(src->unwrapped_wrapper(), "");
    }
    {
      SCOPED_TRACE("ReportNamesTheWrapper");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("lightning.pt")));
      ValidateOptions options;
      options.allow_unexpected = true;  // the buffers
      ASSERT_OK_AND_ASSIGN(
          WeightReport r,
          ValidateWeightMap(*src, {{"fc.weight", {3, 4}}, {"fc.bias", {3}}}, options));
      EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
      EXPECT_EQ(r.unwrapped_wrapper, "state_dict");
      EXPECT_EQ(r.stripped_prefix, "model.");  // Lightning's own attribute name
      EXPECT_EQ(r.found, 2);
      EXPECT_THAT(r.facts, Contains(HasSubstr("unwrapped the training wrapper 'state_dict'")));
      EXPECT_THAT(r.skipped_entries, Contains("epoch (int)"));
    }
    {
      SCOPED_TRACE("TensorsInsideAndOutsideAWrapperAreRefused");
      EXPECT_THAT(OpenTorchPt(Path("wrapped_and_top.pt")).status(),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           AllOf(HasSubstr("inside the wrapper 'state_dict'"),
                                 HasSubstr("outside it ('extra.weight')"))));
      EXPECT_THAT(OpenTorchPt(Path("two_wrappers.pt")).status(),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("both under 'state_dict' and under 'module'")));
    }
  }

  // Nesting, views and shared storage, parameters, captures, renamed archives.
  void ReadsOtherLayouts() {
    {
      SCOPED_TRACE("NestedDictsListsAndIntKeys");
      CheckAgainstSidecar("nested.pt");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("nested.pt")));
      EXPECT_THAT(
          src->skipped_entries(),
          UnorderedElementsAre("pair.1.1 (str)", "config (dict, not a tensor)", "scale (float)"));
    }
    {
      SCOPED_TRACE("ViewsOffsetsTransposesAndSharedStorage");
      CheckAgainstSidecar("views.pt");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("views.pt")));
      ASSERT_OK_AND_ASSIGN(at::Tensor base, src->Read("base"));
      ASSERT_OK_AND_ASSIGN(at::Tensor tr, src->Read("transposed"));
      EXPECT_TRUE(at::equal(tr, base.t()));
      // Reads are independent copies: writing one does not change the other.
      base.fill_(0);
      ASSERT_OK_AND_ASSIGN(at::Tensor rows, src->Read("rows"));
      EXPECT_EQ(rows[0][0].item<float>(), 6.0f);
    }
    {
      SCOPED_TRACE("Parameter");
      CheckAgainstSidecar("param.pt");
    }
    {
      SCOPED_TRACE("GzipCapture");
      CheckAgainstSidecar("data_0.ckpt.gz");
      ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("data_0.ckpt.gz")));
      EXPECT_THAT(src->names(), ElementsAre("input_ids", "loss_mask", "hidden_states"));
      EXPECT_EQ(src->Find("hidden_states")->dtype, formats::DType::kBF16);
    }
    {
      SCOPED_TRACE("ArchiveWithOtherTopFolder");
      CheckAgainstSidecar("renamed.pt");
    }
  }

  static std::string* dir_;
  static nlohmann::json* expected_;
  static int fixture_rc_;
};

std::string* TorchPtFileTest::dir_ = nullptr;
nlohmann::json* TorchPtFileTest::expected_ = nullptr;
int TorchPtFileTest::fixture_rc_ = -1;

// Few TEST_Fs: each checks many fixture files (made once per ctest run by
// the make_pt_fixtures step).
TEST_F(TorchPtFileTest, ReadsEveryFixture) {
  ASSERT_NO_FATAL_FAILURE(ReadsPlainFixtures());
  ASSERT_NO_FATAL_FAILURE(ReadsWrappedFixtures());
  ASSERT_NO_FATAL_FAILURE(ReadsOtherLayouts());
}

// Lines of /proc/self/maps that name `file`.
int MappingsOf(const std::string& file) {
  std::ifstream in("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    n += line.size() >= file.size() &&
         line.compare(line.size() - file.size(), file.size(), file) == 0;
  return n;
}

TEST_F(TorchPtFileTest, LargeRecordsAreMappedInPlace) {
  for (const char* file : {"large.pt", "large_rezipped.pt", "large_deflated.pt"}) {
    CheckAgainstSidecar(file);
  }
  ASSERT_EQ(MappingsOf(Path("large.pt")), 0);
  at::Tensor big, again;
  {
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("large.pt")));
    ASSERT_OK_AND_ASSIGN(big, src->Read("big"));
    ASSERT_OK_AND_ASSIGN(again, src->Read("big"));
  }
  // The source is gone; the tensors' own mappings of the file remain.
  EXPECT_EQ(MappingsOf(Path("large.pt")), 2);
  const nlohmann::json& want = (*expected_)["large.pt"]["tensors"]["big"]["values"];
  EXPECT_EQ(big.view({-1})[777].item<float>(), want[777].get<double>());
  // Reads are independent: writing one changes neither the other nor the file.
  big.fill_(0);
  EXPECT_EQ(again.view({-1})[777].item<float>(), want[777].get<double>());
  big = at::Tensor();
  again = at::Tensor();
  EXPECT_EQ(MappingsOf(Path("large.pt")), 0);
  CheckAgainstSidecar("large.pt");
  // Deflated records are inflated, never mapped.
  {
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("large_deflated.pt")));
    ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read("big"));
    EXPECT_EQ(MappingsOf(Path("large_deflated.pt")), 1);  // the source's own
  }
  // A record shorter than its storage is refused, not mapped past its end.
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("large_short.pt")));
  EXPECT_THAT(src->Read("big"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("holds 70000 bytes; expected 81920")));
}

TEST_F(TorchPtFileTest, RefusesBadContent) {
  {
    SCOPED_TRACE("LegacyFormatIsRefusedWithHint");
    EXPECT_THAT(OpenTorchPt(Path("legacy.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("legacy (pre-1.6, non-zip) torch.save format"),
                               HasSubstr("load it with torch.load and save it again with "
                                         "torch.save(obj, path)"))));
  }
  {
    SCOPED_TRACE("DisallowedGlobals");
    EXPECT_THAT(OpenTorchPt(Path("bad_global.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("pickle: global 'datetime.datetime' is not allowed")));
    EXPECT_THAT(OpenTorchPt(Path("bad_class.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("pickle: global '__main__.Custom' is not allowed")));
  }
  {
    SCOPED_TRACE("TensorRunningPastItsStorage");
    EXPECT_THAT(OpenTorchPt(Path("overrun.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("tensor 'bad' (offset 2, size [4], stride [1]) needs 6 "
                                   "elements of storage '0', which holds 4")));
  }
  {
    SCOPED_TRACE("StorageRecordOfWrongSize");
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("short_storage.pt")));
    EXPECT_THAT(src->Read("only.weight"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("tensor 'only.weight': storage record 'data/0'")));
    EXPECT_THAT(src->Read("only.weight"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("holds 8 bytes; expected 24 (6 elements of F32)")));
  }
}

// Peak resident memory of this process, in bytes.
int64_t PeakRss() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return int64_t{u.ru_maxrss} * 1024;
}

TEST_F(TorchPtFileTest, RefusesZipBombsBeforeAllocating) {
  const int64_t peak_before = PeakRss();
  {
    SCOPED_TRACE("DeflatedRecordFarLargerThanItsStorage");
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("bomb_record.pt")));
    EXPECT_THAT(
        src->Read("only.weight"),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 "tensor 'only.weight': storage record 'data/0' in '" + Path("bomb_record.pt") +
                     "' holds 67108864 bytes; expected 24 (6 elements of F32)"));
  }
  {
    SCOPED_TRACE("PickleInflatingPastItsLimit");
    EXPECT_THAT(OpenTorchPt(Path("bomb_pickle.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "'" + Path("bomb_pickle.pt") +
                             "': single/data.pkl is 1090519040 bytes; the limit is 1073741824"));
  }
  {
    SCOPED_TRACE("SizeNoDeflateStreamCanReach");
    EXPECT_THAT(OpenTorchPt(Path("lying_pickle.pt")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("'", Path("lying_pickle.pt"),
                                      "' is not a valid torch.save zip archive: zip entry "
                                      "'single/data.pkl' declares 2147483647 bytes from ",
                                      (*expected_)["lying_pickle.pt compressed"].get<int>(),
                                      " compressed, more than deflate can produce")));
  }
  // Inflating either bomb would have taken 64 MiB or 1 GiB.
  EXPECT_LT(PeakRss() - peak_before, int64_t{32} << 20);
}

TEST_F(TorchPtFileTest, RefusesBrokenFilesAndUnknownNames) {
  {
    SCOPED_TRACE("TruncatedZip");
    std::string bytes = ReadFileOrEmpty(Path("plain.pt"));
    ASSERT_GT(bytes.size(), 100u);
    TempDir tmp;
    std::string p = tmp.WriteFile("cut.pt", bytes.substr(0, bytes.size() / 2));
    EXPECT_THAT(OpenTorchPt(p), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("is not a valid torch.save zip archive")));
  }
  {
    SCOPED_TRACE("CorruptAndTruncatedGzip");
    std::string gz = ReadFileOrEmpty(Path("data_0.ckpt.gz"));
    TempDir tmp;
    std::string cut = tmp.WriteFile("cut.ckpt.gz", gz.substr(0, gz.size() / 2));
    EXPECT_THAT(OpenTorchPt(cut), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("is a truncated gzip file")));
    std::string bad = gz;
    for (size_t i = 20; i < 60 && i < bad.size(); ++i) bad[i] = static_cast<char>(0xff);
    std::string corrupt = tmp.WriteFile("bad.ckpt.gz", bad);
    EXPECT_THAT(OpenTorchPt(corrupt),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a corrupt gzip file")));
  }
  {
    SCOPED_TRACE("MissingNotZipAndEmptyFiles");
    EXPECT_THAT(OpenTorchPt(Path("nope.pt")),
                StatusIs(absl::StatusCode::kNotFound,
                         HasSubstr("torch checkpoint '" + Path("nope.pt") + "' does not exist")));
    TempDir tmp;
    EXPECT_THAT(OpenTorchPt(tmp.WriteFile("text.pt", "hello world")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is not a torch.save zip archive (no PK zip magic)")));
    EXPECT_THAT(OpenTorchPt(tmp.WriteFile("empty.pt", "")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
    EXPECT_THAT(OpenTorchPt(tmp.path()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
  }
  {
    SCOPED_TRACE("ReadUnknownNameIsNotFound");
    ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenTorchPt(Path("plain.pt")));
    EXPECT_THAT(
        src->Read("fc.wieght"),
        StatusIs(absl::StatusCode::kNotFound,
                 AllOf(HasSubstr("tensor 'fc.wieght' not found in '" + Path("plain.pt") + "'"),
                       HasSubstr("present: 'fc.weight'"))));
    EXPECT_THAT(src->Read("fc.weight2"),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("present: 'fc.weight'")));
  }
}

}  // namespace
}  // namespace dflash::weights
