// SetOpsObserver and Ops() (common/ops_observer.h): with none installed
// Ops() is one no-op observer; an installed observer gets every hook with
// its exact arguments, from any thread; removing it brings the no-op back;
// hooks a subclass does not override do nothing.
#include "common/ops_observer.h"

#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Writes each call as one line: the hook, then its arguments.
class RecordingObserver : public OpsObserver {
 public:
  void OnRpc(absl::string_view method, absl::StatusCode code, double seconds) override {
    calls.push_back(
        absl::StrCat("rpc ", method, " ", absl::StatusCodeToString(code), " ", seconds));
  }
  void OnJobStates(const std::map<std::string, int64_t>& counts) override {
    std::string line = "states";
    for (const auto& [state, n] : counts) absl::StrAppend(&line, " ", state, "=", n);
    calls.push_back(line);
  }
  void OnJobFinished(absl::string_view state, double seconds) override {
    calls.push_back(absl::StrCat("finished ", state, " ", seconds));
  }
  void OnLoad(absl::string_view kind, absl::StatusCode code, double seconds) override {
    calls.push_back(absl::StrCat("load ", kind, " ", absl::StatusCodeToString(code), " ", seconds));
  }
  void OnEval(absl::StatusCode code, double seconds, const EvalCounts* counts) override {
    std::string line = absl::StrCat("eval ", absl::StatusCodeToString(code), " ", seconds);
    if (counts != nullptr) {
      absl::StrAppend(&line, " blocks=", counts->blocks, " tokens=", counts->tokens_scored,
                      " compute=", counts->compute_seconds);
    }
    calls.push_back(line);
  }

  std::vector<std::string> calls;
};

// Every hook once, through Ops().
void ReportOneOfEach() {
  Ops().OnRpc("RunEval", absl::StatusCode::kInvalidArgument, 0.25);
  Ops().OnJobStates({{"running", 1}, {"queued", 3}});
  Ops().OnJobFinished("succeeded", 12.5);
  Ops().OnLoad("drafter", absl::StatusCode::kOk, 2);
  EvalCounts counts;
  counts.blocks = 7;
  counts.tokens_scored = 49;
  counts.compute_seconds = 1.75;
  Ops().OnEval(absl::StatusCode::kOk, 3.5, &counts);
  Ops().OnEval(absl::StatusCode::kCancelled, 0.5, nullptr);
}

class OpsObserverTest : public ::testing::Test {
 protected:
  // Each test starts and ends with no observer installed.
  void SetUp() override { SetOpsObserver(nullptr); }
  void TearDown() override { SetOpsObserver(nullptr); }
};

TEST_F(OpsObserverTest, WithNoneInstalledOpsIsOneNoOpObserver) {
  OpsObserver& noop = Ops();
  EXPECT_EQ(&Ops(), &noop);  // the same object every time
  ReportOneOfEach();         // and every hook does nothing
  EXPECT_EQ(&Ops(), &noop);
}

TEST_F(OpsObserverTest, TheInstalledObserverGetsEveryHookWithItsArguments) {
  RecordingObserver rec;
  SetOpsObserver(&rec);
  EXPECT_EQ(&Ops(), &rec);
  ReportOneOfEach();
  EXPECT_THAT(rec.calls,
              ElementsAre("rpc RunEval INVALID_ARGUMENT 0.25",
                          "states queued=3 running=1",  // a std::map: by state name
                          "finished succeeded 12.5", "load drafter OK 2",
                          "eval OK 3.5 blocks=7 tokens=49 compute=1.75", "eval CANCELLED 0.5"));
}

TEST_F(OpsObserverTest, RemovingTheObserverBringsTheNoOpBack) {
  OpsObserver& noop = Ops();
  RecordingObserver rec;
  SetOpsObserver(&rec);
  SetOpsObserver(nullptr);
  EXPECT_EQ(&Ops(), &noop);
  ReportOneOfEach();
  EXPECT_THAT(rec.calls, IsEmpty());
}

TEST_F(OpsObserverTest, ANewObserverReplacesTheOld) {
  RecordingObserver first, second;
  SetOpsObserver(&first);
  Ops().OnJobFinished("failed", 1);
  SetOpsObserver(&second);
  Ops().OnJobFinished("cancelled", 2);
  EXPECT_THAT(first.calls, ElementsAre("finished failed 1"));
  EXPECT_THAT(second.calls, ElementsAre("finished cancelled 2"));
}

TEST_F(OpsObserverTest, TheObserverIsProcessWideNotPerThread) {
  RecordingObserver rec;
  SetOpsObserver(&rec);
  std::thread worker([] { Ops().OnLoad("dataset", absl::StatusCode::kNotFound, 0.5); });
  worker.join();
  EXPECT_THAT(rec.calls, ElementsAre("load dataset NOT_FOUND 0.5"));
}

// An observer that overrides one hook: the others are the base class's
// no-ops, so a metrics backend implements only what it exports.
TEST_F(OpsObserverTest, HooksNotOverriddenDoNothing) {
  struct RpcOnly : OpsObserver {
    void OnRpc(absl::string_view method, absl::StatusCode code, double seconds) override {
      calls.push_back(absl::StrCat(method, " ", absl::StatusCodeToString(code), " ", seconds));
    }
    std::vector<std::string> calls;
  } rpc_only;
  SetOpsObserver(&rpc_only);
  ReportOneOfEach();
  EXPECT_THAT(rpc_only.calls, ElementsAre("RunEval INVALID_ARGUMENT 0.25"));
}

TEST(EvalCountsTest, StartsAtZero) {
  const EvalCounts counts;
  EXPECT_EQ(counts.blocks, 0);
  EXPECT_EQ(counts.tokens_scored, 0);
  EXPECT_EQ(counts.compute_seconds, 0);
}

}  // namespace
}  // namespace dflash
