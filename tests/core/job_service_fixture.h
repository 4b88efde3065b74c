// File: job_service_fixture.h
// Test fixture for the JobServiceImpl tests (job_service_impl_test,
// job_compare_test, job_gate_test): a fake core whose RunEval the test can
// hold open, a SQLite store in a temporary folder, and the service over them.
//
//   TEST_F(JobServiceImplTest, X) { Start(); auto job = service_->Submit(Request()); ... }
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/job_service_impl.h"
#include "fakes/fake_eval_core.h"
#include "gtest/gtest.h"
#include "store/sqlite_result_store.h"
#include "test_util/temp_dir.h"

namespace dflash::core {

// RunEval blocks until Release() when `hold` is set; records every call.
class GatedCore : public dflash::testing::FakeEvalCore {
 public:
  absl::StatusOr<types::EvalResult> RunEval(const types::EvalParams& p,
                                            const types::ProgressFn& progress) override;
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override;
  void WaitStarted(int n);
  void Release();
  std::vector<std::string> unloads();
  std::vector<types::EvalParams> runs();

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
                                const std::string& fp);

// Four samples alike (B = 2) on dataset "h64:d", accept length
// accepted_total / 2 in each: a paired interval is then the point
// difference. The caller sets r.positions.
void SetFourLikeSamples(types::EvalResult& r, int64_t accepted_total);

// Target t, dataset d and drafter m resident; RunEval returns 7 replay
// blocks at accept length 2.5 unless the test changes core_.eval_result.
class JobServiceImplTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Creates service_ (after the test has set up core_).
  void Start();

  // Drafter `drafter` on dataset d, replay, three samples.
  static types::JobRequest Request(const std::string& drafter = "m");

  // Blocks until job `id` has finished; returns its final record.
  types::JobRecord WaitDone(const std::string& id);

  dflash::testing::TempDir dir_;
  GatedCore core_;
  std::unique_ptr<store::SqliteResultStore> store_;
  std::unique_ptr<JobServiceImpl> service_;
};

}  // namespace dflash::core
