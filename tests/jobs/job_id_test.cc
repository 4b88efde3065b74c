// Job ids (jobs/job_id.h): "ev-<UTC second>-<counter>", each greater than the
// last and than the id the generator starts after, whatever the clock does.
#include "jobs/job_id.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace dflash::jobs {
namespace {

// Moved from job_queue_test.cc.
TEST(JobIdGeneratorTest, IdsAreSortableAndUniqueWithinASecondAndAcrossClockSteps) {
  JobIdGenerator ids;
  const int64_t t = 1796014502000000;  // 2026-11-30 04:55:02 UTC
  EXPECT_EQ(ids.Next(t), "ev-20261130-045502-0001");
  EXPECT_EQ(ids.Next(t + 10), "ev-20261130-045502-0002");
  EXPECT_EQ(ids.Next(t - 5000000), "ev-20261130-045502-0003");  // clock stepped back
  EXPECT_EQ(ids.Next(t + 1000000), "ev-20261130-045503-0001");
  JobIdGenerator after("ev-20261130-045502-0041");
  EXPECT_EQ(after.Next(t), "ev-20261130-045502-0042");
}

// Past the four-digit counter, and after an id of a foreign format, the next
// id still sorts after the last one.
TEST(JobIdGeneratorTest, IdsKeepIncreasingPastTheCounterAndAfterForeignIds) {
  const int64_t t = 1796014502000000;  // 2026-11-30 04:55:02 UTC
  JobIdGenerator ids("ev-20261130-045502-9998");
  std::string last = "ev-20261130-045502-9998";
  for (int i = 0; i < 5; ++i) {
    const std::string id = ids.Next(t);
    EXPECT_GT(id, last) << i;
    last = id;
  }
  EXPECT_EQ(JobIdGenerator("ev-20261130-045502-9998").Next(t), "ev-20261130-045502-9999");
  JobIdGenerator foreign("zz-job");
  const std::string first = foreign.Next(t);
  EXPECT_EQ(first, "zz-job-1");
  EXPECT_GT(foreign.Next(t), first);
  // A later second starts its own counter at 1.
  EXPECT_EQ(JobIdGenerator("ev-20261130-045502-0007").Next(t + 3000000), "ev-20261130-045505-0001");
}

}  // namespace
}  // namespace dflash::jobs
