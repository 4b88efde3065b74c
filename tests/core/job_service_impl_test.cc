// JobServiceImpl over a fake core whose RunEval the test holds open
// (job_service_fixture.h): submit checks against what is resident (exact
// codes and messages), a job runs RunEval with the request's parameters,
// unload is refused while a queued or running job names the object, and
// unload_after. Compare is in job_compare_test.cc, the gate in
// job_gate_test.cc.
#include "core/job_service_impl.h"

#include <string>

#include "common/fix_hint.h"
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

TEST_F(JobServiceImplTest, SubmitChecksAgainstWhatIsResident) {
  Start();
  types::JobRequest none = Request("");
  EXPECT_THAT(service_->Submit(none),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("give a resident drafter name or a checkpoint path")));
  types::JobRequest both = Request();
  both.params.checkpoint_path = "/x";
  EXPECT_THAT(service_->Submit(both),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("give a resident drafter name or a checkpoint path, not both")));
  types::JobRequest no_data = Request();
  no_data.params.dataset.clear();
  EXPECT_THAT(service_->Submit(no_data),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("dataset is required")));
  EXPECT_THAT(
      service_->Submit(Request("x")),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident drafter named 'x' (resident: m)")));
  types::JobRequest other_data = Request();
  other_data.params.dataset = "e";
  EXPECT_THAT(
      service_->Submit(other_data),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident dataset named 'e' (resident: d)")));
  // The pick is RunEval's (resident/pick.h): the flag that fixes it is
  // a FixHint the service words (" with --target"), not core's text.
  core_.resources.push_back(Resident(resident::ResourceKind::kTarget, "t2", "h64:t2"));
  absl::StatusOr<types::JobRecord> two = service_->Submit(Request());
  EXPECT_THAT(two, StatusIs(absl::StatusCode::kInvalidArgument,
                            Eq("several targets are resident (t, t2); name one")));
  EXPECT_EQ(GetFixHint(two.status()), FixHint::kNameTarget);
  core_.resources = {Resident(resident::ResourceKind::kDataset, "d", "h64:d")};
  absl::StatusOr<types::JobRecord> no_target = service_->Submit(Request());
  EXPECT_THAT(no_target, StatusIs(absl::StatusCode::kFailedPrecondition,
                                  Eq("no target is loaded; load one first")));
  EXPECT_EQ(GetFixHint(no_target.status()), FixHint::kLoadTarget);
}

TEST_F(JobServiceImplTest, JobRunsRunEvalWithTheRequest) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord job, service_->Submit(Request()));
  EXPECT_EQ(job.drafter_fingerprint, "h64:m");
  EXPECT_EQ(job.dataset_fingerprint, "h64:d");
  EXPECT_EQ(job.device, "cpu");
  const JobRecord done = WaitDone(job.id);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  ASSERT_TRUE(done.result.has_value());
  EXPECT_EQ(done.result->blocks, 7);
  ASSERT_EQ(core_.runs().size(), 1u);
  const types::EvalParams p = core_.runs()[0];
  EXPECT_EQ(p.drafter, "m");
  EXPECT_EQ(p.dataset, "d");
  EXPECT_EQ(p.options.mode, types::Mode::kReplay);
  EXPECT_EQ(p.options.max_samples, 3);
  EXPECT_TRUE(core_.unloads().empty());  // no unload_after
}

TEST_F(JobServiceImplTest, FailedRunEvalEndsTheJobFailed) {
  Start();
  core_.next_error = absl::FailedPreconditionError("drafter needs layer 3; dataset holds [1]");
  ASSERT_OK_AND_ASSIGN(JobRecord job, service_->Submit(Request()));
  const JobRecord done = WaitDone(job.id);
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(done.error_message, "drafter needs layer 3; dataset holds [1]");
}

TEST_F(JobServiceImplTest, UnloadRefusedWhileAJobNamesTheObject) {
  core_.hold = true;
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord running, service_->Submit(Request()));
  core_.WaitStarted(1);
  ASSERT_OK_AND_ASSIGN(JobRecord queued, service_->Submit(Request()));
  EXPECT_THAT(service_->Unload(resident::ResourceKind::kDrafter, "m"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("drafter 'm' is used by queued or running jobs " + running.id + ", " +
                          queued.id + "; cancel them or wait for them to finish")));
  EXPECT_THAT(service_->Unload(resident::ResourceKind::kDataset, "d"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("dataset 'd'")));
  // A request without a target name may use any target.
  EXPECT_THAT(service_->Unload(resident::ResourceKind::kTarget, "t"),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("target 't'")));
  // Another drafter is free to go.
  EXPECT_OK(service_->Unload(resident::ResourceKind::kDrafter, "other"));
  EXPECT_THAT(service_->Resubmit(running.id),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("job " + running.id +
                          " is RUNNING; only finished jobs can be resubmitted (cancel it first)")));
  core_.Release();
  EXPECT_EQ(WaitDone(running.id).state, JobState::kSucceeded);
  EXPECT_EQ(WaitDone(queued.id).state, JobState::kSucceeded);
  EXPECT_OK(service_->Unload(resident::ResourceKind::kDrafter, "m"));
  EXPECT_THAT(core_.unloads(), ElementsAre("drafter other", "drafter m"));
}

TEST_F(JobServiceImplTest, UnloadAfterFreesTheDrafterUnlessAnotherJobUsesIt) {
  core_.hold = true;
  Start();
  types::JobRequest r = Request();
  r.unload_after = true;
  ASSERT_OK_AND_ASSIGN(JobRecord first, service_->Submit(r));
  core_.WaitStarted(1);
  ASSERT_OK_AND_ASSIGN(JobRecord second, service_->Submit(r));
  core_.Release();
  const JobRecord a = WaitDone(first.id);
  ASSERT_TRUE(a.result.has_value());
  EXPECT_THAT(a.result->warnings, ElementsAre("unload_after: drafter 'm' kept resident; jobs " +
                                              second.id + " use it"));
  const JobRecord b = WaitDone(second.id);
  ASSERT_TRUE(b.result.has_value());
  EXPECT_TRUE(b.result->warnings.empty());
  EXPECT_THAT(core_.unloads(), ElementsAre("drafter m"));
}

}  // namespace
}  // namespace dflash::core
