// The runs page and a run's page (web/runs_view.cc): the run summary (best
// step, ties, what counts), a run named like a script shown as text, the
// empty state, one chart line per suite dataset and sampled setting, which
// step the per-position chart shows, and the jobs table with its JSON twin.
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "web/view_records.h"
#include "web/views.h"

namespace dflash::web {
namespace {

using ::dflash::testing::Count;
using ::dflash::testing::Job;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// Moved from views_test.cc.
TEST(RunsViewTest, ARunNamedLikeAScriptRendersAsText) {
  const std::string evil = "<script>alert(1)</script>";
  const WebPage runs = RunsView(SummarizeRuns({Job("ev-1", evil, 1, 2.0)}));
  EXPECT_THAT(runs.html, Not(HasSubstr(evil)));
  EXPECT_THAT(runs.html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(runs.html, HasSubstr("href=\"/runs/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\""));
  EXPECT_EQ(runs.json[0]["run"], evil);  // the JSON twin holds the name itself
  const WebPage run = RunView(evil, {Job("ev-1", evil, 1, 2.0)}, std::nullopt);
  EXPECT_THAT(run.html, Not(HasSubstr(evil)));
}

// Moved from views_test.cc.
TEST(RunsViewTest, RunSummaryNamesTheBestStep) {
  const std::vector<RunSummary> s = SummarizeRuns({Job("a", "r", 100, 2.0), Job("b", "r", 200, 2.6),
                                                   Job("c", "r", 300, 2.4), Job("x", "", 1, 9)});
  ASSERT_EQ(s.size(), 1u);  // jobs without a run are not a run
  EXPECT_EQ(s[0].jobs, 3);
  EXPECT_EQ(s[0].latest_step, 300);
  EXPECT_EQ(s[0].best_step, 200);
  EXPECT_EQ(s[0].best_job, "b");
  const WebPage page = RunsView(s);
  EXPECT_EQ(page.json[0]["best_step"], 200);
  EXPECT_THAT(page.html, HasSubstr("<td>200 (2.6)</td>"));
}

TEST(RunsViewTest, RunSummaryCountsStatesAndTakesTheEarliestOfEqualBests) {
  types::JobRecord failed = Job("f", "r", 500, 9.0);  // a better number, but not SUCCEEDED
  failed.state = types::JobState::kFailed;
  types::JobRecord running = Job("g", "r", 400, 0);
  running.state = types::JobState::kRunning;
  running.result.reset();
  running.end_unix_micros = 1000000LL * 1800000000;  // the newest change of the run
  types::JobRecord late_tie = Job("c", "r", 300, 2.5);
  const std::vector<RunSummary> s =
      SummarizeRuns({late_tie, Job("b", "r", 200, 2.5), failed, running, Job("z", "q", 7, 1.0)});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].run, "q");  // by name
  EXPECT_EQ(s[1].run, "r");
  const RunSummary& r = s[1];
  EXPECT_EQ(r.jobs, 4);
  EXPECT_EQ(r.succeeded, 2);
  EXPECT_EQ(r.running, 1);
  EXPECT_EQ(r.latest_step, 500);  // any state counts for the latest step
  EXPECT_EQ(r.best_step, 200);    // 2.5 at steps 300 and 200: the earlier
  EXPECT_EQ(r.best_job, "b");
  EXPECT_DOUBLE_EQ(r.best_accept_length, 2.5);
  EXPECT_EQ(r.last_update_micros, 1000000LL * 1800000000);
}

TEST(RunsViewTest, ARunWithoutASucceededJobHasNoBestStep) {
  types::JobRecord queued = Job("a", "r", 10, 0);
  queued.state = types::JobState::kQueued;
  queued.result.reset();
  const std::vector<RunSummary> s = SummarizeRuns({queued});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].best_step, -1);
  EXPECT_EQ(s[0].best_job, "");
  const WebPage page = RunsView(s);
  EXPECT_EQ(page.json[0]["best_step"], json(nullptr));
  EXPECT_EQ(page.json[0]["succeeded"], 0);
  EXPECT_EQ(page.json[0]["last_update"], "2023-11-14 22:13:30Z");
  EXPECT_THAT(page.html, HasSubstr("<td>10</td><td>-</td><td>2023-11-14 22:13:30Z</td>"));
}

TEST(RunsViewTest, NoRunsSaysHowToMakeOne) {
  EXPECT_TRUE(SummarizeRuns({Job("x", "", 1, 2.0)}).empty());
  const WebPage page = RunsView({});
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.json, json::array());
  EXPECT_THAT(
      page.html,
      HasSubstr("<p class=\"note\">No runs yet: jobs submitted with --run appear here.</p>"));
  EXPECT_THAT(page.html, Not(HasSubstr("<table>")));
  EXPECT_THAT(page.html, HasSubstr("<title>Runs - dflash-evald</title>"));
  EXPECT_THAT(page.html, HasSubstr("<a href=\"/api/runs\">JSON</a>"));
}

// Moved from views_test.cc.
TEST(RunsViewTest, ASuiteRunDrawsOneLinePerDatasetAndTheMacroMean) {
  std::vector<types::JobRecord> jobs;
  for (int step : {1, 2, 3}) {
    types::JobRecord j = Job("s" + std::to_string(step), "suite-run", step, 2.0 + step * 0.1);
    j.result->suite = "d1,d2";
    for (const char* d : {"d1", "d2"}) {
      types::DatasetResult part{d, {}};
      part.result.accept_length_pooled = step;
      j.result->suite_results.push_back(part);
    }
    jobs.push_back(j);
  }
  jobs[1].result->gate = types::GateVerdict{};
  jobs[1].result->gate->verdict = "worse";
  const WebPage page = RunView("suite-run", jobs, std::nullopt);
  // Two charts (accept length, tau), each with d1, d2 and the macro mean.
  EXPECT_EQ(Count(page.html, "<path class=\"series\""), 6) << page.html;
  EXPECT_THAT(page.html, HasSubstr("data-name=\"d1\""));
  EXPECT_THAT(page.html, HasSubstr("data-name=\"macro mean\""));
  EXPECT_EQ(Count(page.html, "stroke=\"#b00\""), 2);  // the worse gate, on both charts
  EXPECT_EQ(page.json["jobs"].size(), 3u);
  EXPECT_NEAR(page.json["jobs"][2]["accept_length"].get<double>(), 2.3, 1e-12);
  EXPECT_THAT(page.html, HasSubstr("2.3 [2.1, 2.5]"));
}

// Moved from views_test.cc.
TEST(RunsViewTest, SampledSettingsAreExtraLinesOnTheRunCharts) {
  std::vector<types::JobRecord> jobs;
  for (int step : {1, 2}) {
    jobs.push_back(Job("s" + std::to_string(step), "r", step, 2.0));
    for (double p : {1.0, 0.95}) {
      types::SampledAcceptance s;
      s.setting.temperature = 0.6;
      s.setting.top_p = p;
      s.expected_accept_length_pooled = 1.5 + p;
      s.expected_tau = 1.4 + p;
      jobs.back().result->sampling.push_back(s);
    }
  }
  const WebPage page = RunView("r", jobs, std::nullopt);
  // Each chart: the greedy line and one per setting (same T, different top-p).
  EXPECT_EQ(Count(page.html, "<path class=\"series\""), 2 * 3) << page.html;
  EXPECT_EQ(Count(page.html, "data-name=\"expected at t=0.6\""), 2);
  EXPECT_EQ(Count(page.html, "data-name=\"expected at t=0.6,p=0.95\""), 2);
  EXPECT_EQ(page.json["series"],
            nlohmann::json({"accept length", "expected at t=0.6", "expected at t=0.6,p=0.95"}));
}

// Steps 1 and 2 SUCCEEDED (positions 1..2 and 1..3), step 3 FAILED.
std::vector<types::JobRecord> ThreeSteps() {
  std::vector<types::JobRecord> jobs = {Job("s1", "r", 1, 2.0), Job("s2", "r", 2, 2.2),
                                        Job("s3", "r", 3, 0)};
  for (int64_t n : {2, 3}) {
    types::EvalResult& r = *jobs[static_cast<size_t>(n - 2)].result;
    for (int64_t k = 1; k <= n; ++k) {
      types::PositionMetrics p;
      p.position = static_cast<int>(k);
      p.acceptance = 1.0 / static_cast<double>(k);
      r.positions.push_back(p);
    }
  }
  jobs[2].state = types::JobState::kFailed;
  jobs[2].result.reset();
  return jobs;
}

TEST(RunsViewTest, ThePositionChartShowsTheLatestSucceededStepOrTheOneAsked) {
  const std::vector<types::JobRecord> jobs = ThreeSteps();
  const WebPage latest = RunView("r", jobs, std::nullopt);
  EXPECT_THAT(latest.html, HasSubstr("acceptance by position at step 2 (s2)"));  // not the failed 3
  EXPECT_EQ(Count(latest.html, "<rect class=\"bar\""), 3);
  EXPECT_EQ(latest.json["chosen_job"], "s2");

  const WebPage first = RunView("r", jobs, int64_t{1});
  EXPECT_THAT(first.html, HasSubstr("acceptance by position at step 1 (s1)"));
  EXPECT_EQ(Count(first.html, "<rect class=\"bar\""), 2);
  EXPECT_EQ(first.json["chosen_job"], "s1");

  for (int64_t step : {3, 99}) {  // failed, or no such step: no chart
    const WebPage none = RunView("r", jobs, step);
    EXPECT_THAT(none.html, Not(HasSubstr("acceptance by position")));
    EXPECT_EQ(none.json["chosen_job"], json(nullptr));
    EXPECT_EQ(none.json["jobs"].size(), 3u);  // the table still lists every job
  }
}

TEST(RunsViewTest, TheJobsTableShowsEachJobAndItsNumbers) {
  std::vector<types::JobRecord> jobs = ThreeSteps();
  jobs[1].request.params.dataset = "<ds>";
  jobs[1].result->gate = types::GateVerdict{};
  jobs[1].result->gate->verdict = "pass";
  jobs[1].result->tau_ci = types::Interval{2.0, 2.2};
  jobs[1].result->suite_results.push_back({"d1", {}});
  jobs[1].result->suite_results.back().result.accept_length_pooled = 1.75;
  const WebPage page = RunView("r/1", jobs, std::nullopt);
  EXPECT_THAT(page.html,
              HasSubstr("<tr><td><a href=\"/jobs/s3\">s3</a></td><td>3</td><td>FAILED</td>"
                        "<td>-</td><td>-</td><td></td><td>d</td></tr>"));
  EXPECT_THAT(page.html,
              HasSubstr("<tr><td><a href=\"/jobs/s2\">s2</a></td><td>2</td><td>SUCCEEDED</td>"
                        "<td>2.2 [2, 2.4]</td><td>2.1 [2, 2.2]</td>"
                        "<td><span class=\"pass\">pass</span></td><td>&lt;ds&gt;</td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<title>Run r/1 - dflash-evald</title>"));
  EXPECT_THAT(page.html, HasSubstr("<a href=\"/api/runs/r%2F1\">JSON</a>"));

  EXPECT_EQ(page.json["run"], "r/1");
  const json& failed = page.json["jobs"][2];
  EXPECT_EQ(failed, json({{"id", "s3"}, {"step", 3}, {"state", "FAILED"}, {"dataset", "d"}}));
  const json& s2 = page.json["jobs"][1];
  EXPECT_EQ(s2["gate"], "pass");
  EXPECT_EQ(s2["tau_ci"], json({2.0, 2.2}));
  EXPECT_EQ(s2["suite_accept_length"], json({{"d1", 1.75}}));
  const json& s1 = page.json["jobs"][0];
  EXPECT_EQ(s1["gate"], json(nullptr));
  EXPECT_EQ(s1["tau_ci"], json(nullptr));
  EXPECT_FALSE(s1.contains("suite_accept_length"));
}

}  // namespace
}  // namespace dflash::web
