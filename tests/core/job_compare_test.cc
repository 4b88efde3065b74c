// JobServiceImpl::Compare (core/job_compare.cc) over the fake core: finished
// jobs side by side, their recipes checked, the paired differences when the
// results have per-sample counts, and each refusal's exact message.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/job_service_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_service_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using types::JobRecord;
using types::JobState;

// Moved from job_service_impl_test.cc.
TEST_F(JobServiceImplTest, ResubmitAndCompare) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord a, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(a.id).state, JobState::kSucceeded);
  core_.eval_result.accept_length_pooled = 3.0;
  core_.eval_result.mode = types::Mode::kAnchor;
  ASSERT_OK_AND_ASSIGN(JobRecord b, service_->Resubmit(a.id));
  EXPECT_EQ(b.resubmitted_from, a.id);
  EXPECT_NE(b.id, a.id);
  ASSERT_EQ(WaitDone(b.id).state, JobState::kSucceeded);

  EXPECT_THAT(service_->Compare({a.id}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("compare needs at least two job ids; got 1")));
  // Another mode is another recipe (core/recipe.h): refused unless allowed.
  EXPECT_THAT(
      service_->Compare({a.id, b.id}, {}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr(absl::StrCat("compare: the jobs' recipes differ, so their numbers are not "
                                      "comparable: ",
                                      b.id, " against ", a.id, " (mode: replay vs anchor; "))));
  CompareOptions allow;
  allow.allow_recipe_mismatch = true;
  ASSERT_OK_AND_ASSIGN(Comparison c, service_->Compare({a.id, b.id}, allow));
  ASSERT_EQ(c.jobs.size(), 2u);
  EXPECT_THAT(c.accept_length, ElementsAre(2.5, 3.0));
  EXPECT_THAT(c.accept_length_delta, ElementsAre(0.0, 0.5));
  // The fake's results have no per-sample counts: no paired intervals, and why.
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_EQ(c.warnings.front(),
            "recipe of " + b.id + " differs from " + a.id + ": mode: replay vs anchor");
  EXPECT_EQ(c.warnings.back(), "no paired intervals: cannot pair " + a.id + " and " + b.id + ": " +
                                   a.id + " has no sample with a scored block");
  EXPECT_TRUE(c.differences.empty());
  CompareOptions strict = allow;
  strict.require_paired = true;
  EXPECT_THAT(service_->Compare({a.id, b.id}, strict),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("cannot pair " + a.id + " and " + b.id + ": " + a.id +
                          " has no sample with a scored block")));

  core_.next_error = absl::InternalError("boom");
  ASSERT_OK_AND_ASSIGN(JobRecord failed, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(failed.id).state, JobState::kFailed);
  EXPECT_THAT(service_->Compare({a.id, failed.id}, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("job " + failed.id + " is FAILED; only SUCCEEDED jobs can be compared")));
}
// Four samples alike (SetFourLikeSamples), with position metrics.
void SetPerSample(types::EvalResult& r, int64_t accepted_total) {
  SetFourLikeSamples(r, accepted_total);
  r.positions.assign(1, types::PositionMetrics{1, 8, 4, 0.5, 4, 0.5, 8, 0.5});
}

TEST_F(JobServiceImplTest, CompareWithPerSampleCountsGivesPairedDifferences) {
  Start();
  SetPerSample(core_.eval_result, 3);
  ASSERT_OK_AND_ASSIGN(JobRecord a, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(a.id).state, JobState::kSucceeded);
  SetPerSample(core_.eval_result, 4);
  ASSERT_OK_AND_ASSIGN(JobRecord b, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(b.id).state, JobState::kSucceeded);
  CompareOptions o;
  o.resamples = 50;
  ASSERT_OK_AND_ASSIGN(Comparison c, service_->Compare({a.id, b.id}, o));
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  ASSERT_EQ(c.positions.size(), 1u);
  EXPECT_EQ(c.positions[0].position, 1);
  EXPECT_THAT(c.positions[0].accuracy_delta, ElementsAre(0.0, 0.0));
  ASSERT_FALSE(c.differences.empty());
  EXPECT_EQ(c.differences[0].metric, "accept_length");
  EXPECT_EQ(c.differences[0].delta, 0.5);
  EXPECT_EQ(c.differences[0].verdict, "better");
}

TEST_F(JobServiceImplTest, CompareOfAnUnknownJobIsNotFound) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord a, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(a.id).state, JobState::kSucceeded);
  EXPECT_THAT(service_->Compare({a.id, "ev-none"}, {}),
              StatusIs(absl::StatusCode::kNotFound, Eq("no job with id 'ev-none'")));
  EXPECT_THAT(service_->Compare({}, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  Eq("compare needs at least two job ids; got 0")));
}

}  // namespace
}  // namespace dflash::core
