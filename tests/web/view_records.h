// File: view_records.h
// What the web view tests (tests/web/*_view_test.cc, job_sections_test.cc,
// web_site_test.cc) build their pages from: a SUCCEEDED job record of a run
// with a small result (test_util/text_count.h counts a string in a page).
//
//   const WebPage page = RunsView(SummarizeRuns({Job("a", "r", 100, 2.0)}));
//   EXPECT_EQ(Count(page.html, "<tr>"), 2);
#pragma once

#include <cstdint>
#include <string>

#include "test_util/text_count.h"
#include "types/job_types.h"

namespace dflash::testing {

// A SUCCEEDED job `id` of `run` at `step` on dataset "d", created at
// 1'700'000'000 + step seconds: accept length `accept` with the interval
// [accept - 0.2, accept + 0.2], tau `accept - 0.1` without one.
types::JobRecord Job(const std::string& id, const std::string& run, int64_t step, double accept);

}  // namespace dflash::testing
