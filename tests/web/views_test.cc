// The web view's pages from plain records (web/views.h): a user's text shown
// as text, the run summary, one chart line per suite dataset, error pages.
#include "web/views.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "types/eval_result_fields.h"
#include "web/html.h"

namespace dflash::web {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

types::JobRecord Job(const std::string& id, const std::string& run, int64_t step, double accept) {
  types::JobRecord j;
  j.id = id;
  j.request.run = run;
  j.request.step = step;
  j.request.params.dataset = "d";
  j.state = types::JobState::kSucceeded;
  types::EvalResult r;
  r.accept_length_pooled = accept;
  r.tau = accept - 0.1;
  r.accept_length_ci = types::Interval{accept - 0.2, accept + 0.2};
  j.result = r;
  j.create_unix_micros = 1000000 * (1700000000 + step);
  return j;
}

TEST(WebViewsTest, ARunNamedLikeAScriptRendersAsText) {
  const std::string evil = "<script>alert(1)</script>";
  const WebPage runs = RunsView(SummarizeRuns({Job("ev-1", evil, 1, 2.0)}));
  EXPECT_THAT(runs.html, Not(HasSubstr(evil)));
  EXPECT_THAT(runs.html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(runs.html, HasSubstr("href=\"/runs/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\""));
  EXPECT_EQ(runs.json[0]["run"], evil);  // the JSON twin holds the name itself
  const WebPage run = RunView(evil, {Job("ev-1", evil, 1, 2.0)}, std::nullopt);
  EXPECT_THAT(run.html, Not(HasSubstr(evil)));
}

TEST(WebViewsTest, RunSummaryNamesTheBestStep) {
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

TEST(WebViewsTest, ASuiteRunDrawsOneLinePerDatasetAndTheMacroMean) {
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

TEST(WebViewsTest, JobPageShowsTheResultAndItsRecipe) {
  types::JobRecord j = Job("ev-9", "r", 5, 3.25);
  types::PositionMetrics p;
  p.position = 1;
  p.counted = 10;
  p.acceptance = 0.7;
  j.result->positions = {p, types::PositionMetrics{}};
  j.result->positions[1].position = 2;  // no block reached it
  j.result->accepted_histogram = {3, 7};
  j.result->slices.push_back({"context", "0-512", 2, 10, 3.25, 3.1});
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html, HasSubstr("3.25 [3.05, 3.45]"));
  EXPECT_THAT(page.html, HasSubstr("unavailable"));
  EXPECT_THAT(page.html, HasSubstr("context=0-512"));
  EXPECT_THAT(page.html, HasSubstr("<h2>Recipe r64:"));
  EXPECT_EQ(Count(page.html, "<rect class=\"bar\""), 2 + 2);  // positions, histogram
  EXPECT_EQ(page.json["id"], "ev-9");
  EXPECT_THAT(page.html, Not(HasSubstr("<script")));  // finished: no polling
}

TEST(WebViewsTest, AShardedJobListsWhereEachShardRan) {
  types::JobRecord j = Job("ev-10", "r", 6, 2.5);
  j.result->shards = {{0, 32, 700, "cpu#0", "host-a:11", 0, 1.25},
                      {32, 64, 690, "cpu#1", "host<b>:12", 4096, 1.5}};
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html, HasSubstr("<h2>Shards</h2>"));
  EXPECT_THAT(page.html, HasSubstr("[32, 64)"));
  EXPECT_THAT(page.html, HasSubstr("host&lt;b&gt;:12"));  // escaped
  EXPECT_THAT(page.html, HasSubstr("4096"));
  j.result->shards.resize(1);  // one piece, nothing read: no section
  EXPECT_THAT(JobView(j).html, Not(HasSubstr("<h2>Shards</h2>")));
}

// Every scalar of the result's field table has a row, so a metric added
// to the table shows on the page with no web edit.
TEST(WebViewsTest, AllFieldsListsEveryScalarOfTheResultTable) {
  types::JobRecord j = Job("ev-11", "r", 6, 2.5);
  j.result->context_positions = 4321;
  j.result->target_fingerprint = "fp<1>";
  const std::string page = JobView(j).html;
  ASSERT_THAT(page, HasSubstr("<summary>All fields</summary>"));
  const size_t at = page.find("<summary>All fields</summary>");
  const std::string html = page.substr(at, page.find("</details>", at) - at);
  EXPECT_THAT(html, HasSubstr("<tr><td>context_positions</td><td>4321</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>target_fingerprint</td><td>fp&lt;1&gt;</td></tr>"));
  types::ForEachField<types::EvalResult>([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    const bool shown = types::kIsScalar<T> && !(f.flags & types::kStoreOnly);
    EXPECT_EQ(html.find(absl::StrCat("<tr><td>", f.name, "</td>")) != std::string::npos, shown)
        << f.name;
  });
}

TEST(WebViewsTest, ARunningJobShowsProgressAndPollsItsTwin) {
  types::JobRecord j = Job("ev-7", "r", 5, 0);
  j.result.reset();
  j.state = types::JobState::kRunning;
  j.progress.blocks_done = 12;
  j.progress.blocks_total = 900;
  j.progress.blocks_total_is_bound = true;
  j.progress.samples_done = 3;
  j.progress.samples_total = 300;
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html, HasSubstr("<span id=\"state\">RUNNING</span>"));
  EXPECT_THAT(page.html, HasSubstr("<span id=\"progress\" data-polls=\"0\">12 of &le;900 "
                                   "blocks, 3 of 300 samples</span>"));
  EXPECT_THAT(page.html, HasSubstr("fetch('/api/jobs/ev-7'"));
  EXPECT_EQ(Count(page.html, "<script>"), 1);
  EXPECT_THAT(page.html, Not(HasSubstr("<h2>Recipe")));  // no result yet
}

TEST(WebViewsTest, Dflash2JobShowsTheSelectorDiagnostics) {
  types::JobRecord j = Job("ev-8", "r", 5, 3.5);
  types::EvalResult& r = *j.result;
  r.blocks = 200;
  r.selector_top_k = 4;
  r.unary_accept_length_pooled = 3.0;
  r.oracle_accept_length_pooled = 4.25;
  r.first_miss = {20, 150, 30};  // all accepted, coverage misses, ranking errors
  r.selector_near_ties = 2;
  types::PositionMetrics p;
  p.position = 1;
  p.counted = 200;
  p.accuracy = 0.75;
  p.unary_accuracy = 0.625;
  p.coverage = 0.875;
  p.tf_accuracy = 0.8125;
  r.positions = {p};
  r.draft_length_curve = {1.5, 2.25, 3.5};
  r.target_consistency = {100, 97, 0.97};
  const std::string html = JobView(j).html;
  EXPECT_THAT(html, HasSubstr("<td>3 / 4.25</td>"));  // unary argmax / top-k oracle
  EXPECT_THAT(html, HasSubstr("<th>selector lift (with minus without)</th><td>+0.5</td>"));
  EXPECT_THAT(html, HasSubstr("<td>75.0% / 15.0% / 10.0%</td>"));  // coverage, ranking, all
  EXPECT_THAT(html, HasSubstr("<td>0.625</td><td>0.875</td><td>0.8125</td>"));
  EXPECT_THAT(html, HasSubstr("<th>tf-select</th>"));
  EXPECT_THAT(html, HasSubstr("draft-length curve"));
  EXPECT_EQ(Count(html, "<path class=\"series\""), 1);         // the greedy curve
  EXPECT_THAT(html, HasSubstr("<td>97.0% (97 of 100)</td>"));  // target consistency
}

TEST(WebViewsTest, SampledSettingsAreExtraLinesOnTheRunCharts) {
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

TEST(WebViewsTest, ErrorPagesSayWhyAndLinkBack) {
  const WebPage e = ErrorView(404, "no run named '<x>'");
  EXPECT_EQ(e.status, 404);
  EXPECT_THAT(e.html, HasSubstr("no run named &#39;&lt;x&gt;&#39;"));
  EXPECT_THAT(e.html, HasSubstr("<a href=\"/\">back to the runs</a>"));
  EXPECT_EQ(e.json["error"], "no run named '<x>'");
}

}  // namespace
}  // namespace dflash::web
