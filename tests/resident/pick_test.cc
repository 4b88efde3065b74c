// File: pick_test.cc
// The resident pick RunEval and SubmitEval share (resident/pick.h):
// exact codes and words, and the FixHint each refusal carries for the edge
// to word with its flags.
#include "resident/pick.h"

#include "common/fix_hint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;

class ResidentPickTest : public ::testing::Test {};

TEST_F(ResidentPickTest, NamedObjectIsFoundOrNamedAsMissing) {
  EXPECT_EQ(*PickResident(ResourceKind::kDrafter, {"a", "m"}, "m"), 1u);
  absl::StatusOr<size_t> missing = PickResident(ResourceKind::kDrafter, {"m"}, "x");
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound,
                                Eq("no resident drafter named 'x' (resident: m)")));
  EXPECT_EQ(GetFixHint(missing.status()), std::nullopt);
  EXPECT_THAT(
      PickResident(ResourceKind::kDataset, {}, "e"),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident dataset named 'e' (resident: none)")));
}

TEST_F(ResidentPickTest, NoNamePicksTheOnlyOne) {
  EXPECT_EQ(*PickResident(ResourceKind::kTarget, {"t"}, ""), 0u);
}

TEST_F(ResidentPickTest, NoNameAndNoneResidentHintsALoad) {
  const struct {
    ResourceKind kind;
    const char* message;
    FixHint hint;
  } cases[] = {
      {ResourceKind::kTarget, "no target is loaded; load one first", FixHint::kLoadTarget},
      {ResourceKind::kDataset, "no dataset is loaded; load one first", FixHint::kLoadDataset},
      {ResourceKind::kDrafter, "no drafter is loaded; load one first", FixHint::kLoadDrafter},
  };
  for (const auto& c : cases) {
    absl::StatusOr<size_t> picked = PickResident(c.kind, {}, "");
    EXPECT_THAT(picked, StatusIs(absl::StatusCode::kFailedPrecondition, Eq(c.message)));
    EXPECT_EQ(GetFixHint(picked.status()), c.hint);
  }
}

TEST_F(ResidentPickTest, NoNameAndSeveralResidentHintsNamingOne) {
  const struct {
    ResourceKind kind;
    const char* message;
    FixHint hint;
  } cases[] = {
      {ResourceKind::kTarget, "several targets are resident (t, t2); name one",
       FixHint::kNameTarget},
      {ResourceKind::kDataset, "several datasets are resident (t, t2); name one",
       FixHint::kNameDataset},
      {ResourceKind::kDrafter, "several drafters are resident (t, t2); name one",
       FixHint::kNameDrafter},
  };
  for (const auto& c : cases) {
    absl::StatusOr<size_t> picked = PickResident(c.kind, {"t", "t2"}, "");
    EXPECT_THAT(picked, StatusIs(absl::StatusCode::kInvalidArgument, Eq(c.message)));
    EXPECT_EQ(GetFixHint(picked.status()), c.hint);
  }
}

}  // namespace
}  // namespace dflash::resident
