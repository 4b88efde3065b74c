// JobServiceImpl over a fake core whose RunEval the test holds open: submit
// checks against what is resident (exact codes and messages), a job runs
// RunEval with the request's parameters, unload is refused while a queued or
// running job names the object, unload_after, resubmit and compare.
#include "core/job_service_impl.h"
#include "core/local_placement.h"
#include "jobs/local_backend.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fix_hint.h"
#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using types::JobRecord;
using types::JobState;

// RunEval blocks until Release() when `hold` is set; records every call.
class GatedCore : public dflash::testing::FakeEvalCore {
 public:
  absl::StatusOr<types::EvalResult> RunEval(const types::EvalParams& p,
                                            const types::ProgressFn& progress) override {
    std::unique_lock<std::mutex> lock(mu_);
    runs_.push_back(p);
    ++started_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold || released_; });
    lock.unlock();
    return FakeEvalCore::RunEval(p, progress);
  }
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    unloads_.push_back(std::string(resident::ResourceKindName(kind)) + " " + name);
    return FakeEvalCore::Unload(kind, name);
  }
  void WaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> unloads() {
    std::lock_guard<std::mutex> lock(mu_);
    return unloads_;
  }
  std::vector<types::EvalParams> runs() {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }

  bool hold = false;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  bool released_ = false;
  std::vector<types::EvalParams> runs_;
  std::vector<std::string> unloads_;
};

resident::ResourceInfo Resident(resident::ResourceKind kind, const std::string& name,
                                const std::string& fp) {
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.fingerprint = fp;
  r.device = "cpu";
  return r;
}

class JobServiceImplTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_.resources = {Resident(resident::ResourceKind::kTarget, "t", "h64:t"),
                       Resident(resident::ResourceKind::kDataset, "d", "h64:d"),
                       Resident(resident::ResourceKind::kDrafter, "m", "h64:m")};
    core_.eval_result.blocks = 7;
    core_.eval_result.mode = types::Mode::kReplay;
    core_.eval_result.accept_length_pooled = 2.5;
    auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }
  void Start() {
    auto svc = JobServiceImpl::Create(core_, *store_, jobs::JobQueueOptions{},
                                      std::make_unique<jobs::LocalBackend>(*store_),
                                      std::make_unique<LocalPlacement>(core_, SuiteMap{}));
    ASSERT_TRUE(svc.ok()) << svc.status();
    service_ = *std::move(svc);
  }
  void TearDown() override {
    core_.Release();
    service_.reset();
  }

  static types::JobRequest Request(const std::string& drafter = "m") {
    types::JobRequest r;
    r.params.drafter = drafter;
    r.params.dataset = "d";
    r.params.options.mode = types::Mode::kReplay;
    r.params.options.max_samples = 3;
    return r;
  }

  // Blocks until job `id` has finished; returns its final record.
  JobRecord WaitDone(const std::string& id) {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<JobRecord> last;
    auto w = service_->Watch(id, [&](const JobRecord& r) {
      std::lock_guard<std::mutex> lock(mu);
      if (types::IsTerminal(r.state)) last = r;
      cv.notify_all();
    });
    EXPECT_TRUE(w.ok()) << w.status();
    if (!w.ok()) return JobRecord{};
    if (w->handle == 0) return w->current;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return last.has_value(); });
    JobRecord done = *last;
    lock.unlock();
    service_->Unwatch(w->handle);
    return done;
  }

  TempDir dir_;
  GatedCore core_;
  std::unique_ptr<store::SqliteResultStore> store_;
  std::unique_ptr<JobServiceImpl> service_;
};

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

}  // namespace
}  // namespace dflash::core
