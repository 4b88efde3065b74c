// The regression gate's reference (JobServiceImpl::GateReference,
// core/job_gate.cc) through finished jobs of a run: a named job, the best
// or the previous step, on the same data and recipe; and, when there is
// none, the verdict saying why.
#include <string>

#include "core/job_service_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_service_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::testing::HasSubstr;
using types::JobRecord;
using types::JobState;

class JobGateTest : public JobServiceImplTest {
 protected:
  // Four samples alike (B = 2), each with tau = accepted_total / 2.
  void SetTau(int64_t accepted_total) {
    SetFourLikeSamples(core_.eval_result, accepted_total);
    core_.eval_result.positions.assign(1, types::PositionMetrics{});
  }
  // Runs step `step` of run "r" to the end, gated against `reference`
  // ("" = no gate).
  JobRecord Run(int64_t step, const std::string& reference = "", bool allow_mismatch = false) {
    types::JobRequest q = Request();
    q.run = "r";
    q.step = step;
    q.params.options.ci_resamples = 50;
    q.gate.reference = reference;
    q.gate.allow_recipe_mismatch = allow_mismatch;
    absl::StatusOr<JobRecord> job = service_->Submit(q);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return JobRecord{};
    const JobRecord done = WaitDone(job->id);
    EXPECT_EQ(done.state, JobState::kSucceeded) << done.error_message;
    return done;
  }
  static types::GateVerdict Gate(const JobRecord& j) {
    return j.result && j.result->gate ? *j.result->gate : types::GateVerdict{};
  }
};

TEST_F(JobGateTest, BestAndPreviousPickTheirStep) {
  Start();
  SetTau(4);
  const JobRecord high = Run(1);
  SetTau(3);
  const JobRecord low = Run(2);
  const types::GateVerdict previous = Gate(Run(3, "previous"));
  EXPECT_EQ(previous.reference_job, low.id);
  EXPECT_EQ(previous.verdict, "pass");  // 1.5 against 1.5
  const types::GateVerdict best = Gate(Run(4, "best"));
  EXPECT_EQ(best.reference_job, high.id);
  EXPECT_EQ(best.verdict, "worse");  // 1.5 against 2
  // A job named by id, whatever its step.
  EXPECT_EQ(Gate(Run(5, high.id)).reference_job, high.id);
}

TEST_F(JobGateTest, NoReferenceSaysWhy) {
  Start();
  SetTau(3);
  EXPECT_EQ(Gate(Run(4, "best")).text,
            "gate: pass (no reference: no SUCCEEDED job of run 'r' below step 4 on this dataset)");
  EXPECT_EQ(Gate(Run(0, "previous")).text,
            "gate: pass (no reference: step 0 has no earlier step in run 'r')");
  // A named job must exist and have SUCCEEDED at submit (core/local_placement.cc),
  // so GateReference's "has no result" is only a guard here.
  types::JobRequest named = Request();
  named.gate.reference = "ev-none";
  EXPECT_THAT(service_->Submit(named),
              ::dflash::testing::StatusIs(
                  absl::StatusCode::kNotFound,
                  ::testing::Eq(std::string("gate reference: no job with id 'ev-none'"))));
  core_.next_error = absl::InternalError("boom");
  ASSERT_OK_AND_ASSIGN(JobRecord failed, service_->Submit(Request()));
  ASSERT_EQ(WaitDone(failed.id).state, JobState::kFailed);
  core_.next_error = absl::OkStatus();
  named.gate.reference = failed.id;
  EXPECT_THAT(service_->Submit(named),
              ::dflash::testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                          ::testing::Eq("gate reference " + failed.id +
                                                        " is FAILED; the reference must have "
                                                        "SUCCEEDED")));
}

// Another mode is another recipe (core/recipe.h): not a reference unless
// the gate allows it.
TEST_F(JobGateTest, AnotherRecipeIsNamedNotUsed) {
  Start();
  SetTau(3);
  const JobRecord replay = Run(1);
  core_.eval_result.mode = types::Mode::kAnchor;
  const types::GateVerdict v = Gate(Run(2, "previous"));
  EXPECT_EQ(v.verdict, "error");
  EXPECT_THAT(v.text, HasSubstr("gate: cannot decide: FAILED_PRECONDITION: gate: no earlier job of "
                                "run 'r' has this job's recipe ("));
  EXPECT_THAT(v.text, HasSubstr("); the latest, " + replay.id +
                                " (step 1) differs in mode: anchor vs replay; "));
  EXPECT_THAT(v.text,
              ::testing::EndsWith("; pass --allow-recipe-mismatch to gate against it anyway"));
  EXPECT_THAT(
      Gate(Run(3, replay.id)).text,
      HasSubstr("gate: cannot decide: FAILED_PRECONDITION: gate: the jobs' recipes differ"));
  EXPECT_EQ(Gate(Run(4, replay.id, /*allow_mismatch=*/true)).reference_job, replay.id);
}

}  // namespace
}  // namespace dflash::core
