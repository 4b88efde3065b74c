// resident/budget: what is resident, the refusal message, and the
// estimates made before anything is read.
#include "resident/budget.h"

#include <filesystem>
#include <string>

#include "common/fix_hint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/resident_set.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::Eq;

class ResidentBudgetTest : public ::testing::Test {
 protected:
  // One target of 1000 bytes, one drafter of 200, one dataset of 30.
  void SetUp() override {
    r_.targets["t"].info.bytes = 1000;
    r_.drafters["m"].info.bytes = 200;
    r_.datasets["d"].info.bytes = 30;
  }
  ResidentSet r_;
};

TEST_F(ResidentBudgetTest, ResidentBytesAddsEveryKind) {
  EXPECT_EQ(ResidentBytes(r_), 1230);
  ResidentSet empty;
  EXPECT_EQ(ResidentBytes(empty), 0);
}

TEST_F(ResidentBudgetTest, CudaReservedBytesReplaceWhatIsResidentOnCuda) {
  r_.targets["t"].info.device = "cuda:0";
  r_.drafters["m"].info.device = "cuda:0";
  r_.datasets["d"].info.device = "cpu";
  EXPECT_EQ(BudgetBytesInUse(r_, 0), 1230);  // no CUDA: what is resident
  // The allocator holds more than the resident tensors (eval temporaries,
  // its cache): the 1200 CUDA bytes count as the 5000 it reserved.
  EXPECT_EQ(BudgetBytesInUse(r_, 5000), 30 + 5000);
  EXPECT_EQ(BudgetBytesInUse(r_, 500), 1230);  // never less than resident
}

TEST_F(ResidentBudgetTest, FitsUpToTheBudgetExactly) {
  EXPECT_THAT(CheckResidentBudget(r_, 0, "drafter", "x", int64_t{1} << 60, "b"), IsOk());
  EXPECT_THAT(CheckResidentBudget(r_, 2000, "drafter", "x", 770, "b"), IsOk());
  EXPECT_THAT(
      CheckResidentBudget(r_, 2000, "drafter", "x", 771, "estimated from the tensor headers"),
      StatusIs(absl::StatusCode::kResourceExhausted,
               Eq("loading drafter 'x' needs 771 bytes (0.00 GiB) (estimated from the "
                  "tensor headers) but 1230 bytes (0.00 GiB) of the 2000 bytes (0.00 "
                  "GiB) resident budget is in use; unload something first")));
  // The core names no server flag; it marks the status so the service can.
  EXPECT_EQ(GetFixHint(CheckResidentBudget(r_, 2000, "drafter", "x", 771, "b")),
            FixHint::kResidentBudget);
  // Already over budget: nothing fits, not even 0 bytes more.
  EXPECT_THAT(CheckResidentBudget(r_, 1000, "dataset", "d2", 0, "b"),
              StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
  EXPECT_THAT(CheckResidentBudget(r_, int64_t{3} << 30, "target", "big", int64_t{3} << 30,
                                  "estimated from config.json"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading target 'big' needs 3221225472 bytes (3.00 GiB) (estimated "
                          "from config.json) but 1230 bytes (0.00 GiB) of the 3221225472 bytes "
                          "(3.00 GiB) resident budget is in use; unload something first")));
}

TEST_F(ResidentBudgetTest, DrafterEstimateCountsFoundTensorsOnly) {
  weights::WeightReport report;
  weights::TensorEntry a;
  a.shape = {4, 8};
  weights::TensorEntry scalar;  // shape [] holds one element
  weights::TensorEntry missing;
  missing.status = weights::EntryStatus::kMissing;
  missing.shape = {1000};
  weights::TensorEntry wrong;
  wrong.status = weights::EntryStatus::kShapeMismatch;
  wrong.shape = {1000};
  report.tensors = {a, scalar, missing, wrong};
  EXPECT_EQ(EstimateDrafterBytes(report, c10::kFloat), (32 + 1) * 4);
  EXPECT_EQ(EstimateDrafterBytes(report, c10::kBFloat16), (32 + 1) * 2);
  // Absurd shapes saturate instead of overflowing.
  weights::TensorEntry huge;
  huge.shape = {int64_t{1} << 40, int64_t{1} << 40};
  report.tensors = {huge};
  EXPECT_EQ(EstimateDrafterBytes(report, c10::kFloat), int64_t{1} << 62);
}

TEST_F(ResidentBudgetTest, TargetEstimateFromConfig) {
  TempDir dir;
  EXPECT_EQ(EstimateTargetBytes(dir.path(), c10::kFloat, false), 0);  // no config.json
  dir.WriteFile("config.json", R"({"vocab_size": 100, "hidden_size": 8})");
  EXPECT_EQ(EstimateTargetBytes(dir.path(), c10::kFloat, false), 2 * 100 * 8 * 4);
  EXPECT_EQ(EstimateTargetBytes(dir.path(), c10::kBFloat16, true), 2 * 100 * 8 * 2 + 8 * 2);
  dir.WriteFile("config.json", R"({"tie_word_embeddings": true,
                                   "text_config": {"vocab_size": 100, "hidden_size": 8}})");
  EXPECT_EQ(EstimateTargetBytes(dir.path(), c10::kFloat, false), 100 * 8 * 4);
  dir.WriteFile("config.json", "not json");
  EXPECT_EQ(EstimateTargetBytes(dir.path(), c10::kFloat, false), 0);
}

TEST_F(ResidentBudgetTest, DatasetEstimateFromCaptureFileSizes) {
  TempDir dir;
  dir.WriteFile("dataset.json", std::string(1000, ' '));  // not a capture file
  dir.WriteFile("data_0.ckpt", std::string(10, 'x'));
  dir.WriteFile("data_1.ckpt", std::string(20, 'x'));
  dir.WriteFile("sub/data_2.pt", std::string(40, 'x'));
  EXPECT_EQ(EstimateDatasetBytes(dir.path(), 0), 70);
  EXPECT_EQ(EstimateDatasetBytes(dir.path(), 2), 30);  // the first two in sample order
  EXPECT_EQ(EstimateDatasetBytes(dir.Join("absent"), 0), 0);
}

}  // namespace
}  // namespace dflash::resident
