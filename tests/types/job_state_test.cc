// Job states (types/job_types.h, job_state.cc): one spelling each, parsed
// back exactly, an unknown one named with the known ones, and which states
// never change again.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "types/job_types.h"

namespace dflash::types {
namespace {

using ::dflash::testing::StatusIs;

TEST(JobStateTest, NamesParseBackAndOnlyQueuedAndRunningChange) {
  const struct {
    JobState state;
    const char* name;
    bool terminal;
  } rows[] = {
      {JobState::kQueued, "QUEUED", false},      {JobState::kRunning, "RUNNING", false},
      {JobState::kSucceeded, "SUCCEEDED", true}, {JobState::kFailed, "FAILED", true},
      {JobState::kCancelled, "CANCELLED", true}, {JobState::kInterrupted, "INTERRUPTED", true},
  };
  for (const auto& r : rows) {
    EXPECT_STREQ(JobStateName(r.state), r.name);
    ASSERT_OK_AND_ASSIGN(JobState parsed, ParseJobState(r.name));
    EXPECT_EQ(parsed, r.state) << r.name;
    EXPECT_EQ(IsTerminal(r.state), r.terminal) << r.name;
  }
}

TEST(JobStateTest, UnknownNamesAreRefused) {
  for (const char* name : {"queued", "DONE", ""}) {
    EXPECT_THAT(ParseJobState(name),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::Eq(std::string("job state '") + name +
                                       "' is not one of QUEUED, RUNNING, SUCCEEDED, FAILED, "
                                       "CANCELLED, INTERRUPTED")));
  }
}

}  // namespace
}  // namespace dflash::types
