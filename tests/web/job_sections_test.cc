// The job page's result sections (web/job_sections.h): the headline with
// its gate and DFlash 2's selector rows, the per-position table (marginal
// columns "-" when not measured, "unavailable" where no block reached), the
// draft-length curve, sampled acceptance, slices, shards, every scalar
// field, a suite's datasets and the warnings, user text shown as text.
#include "web/job_sections.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "types/eval_result_fields.h"
#include "web/view_records.h"

namespace dflash::web {
namespace {

using ::dflash::testing::Count;
using ::dflash::testing::Job;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// The sections of Job()'s result: accept length 2.5 [2.3, 2.7], tau 2.4.
types::EvalResult Result() {
  return *Job("ev-1", "r", 1, 2.5).result;
}

// Moved from views_test.cc (JobView there; the sections alone here).
TEST(JobSectionsTest, AShardedJobListsWhereEachShardRan) {
  types::JobRecord j = Job("ev-10", "r", 6, 2.5);
  j.result->shards = {{0, 32, 700, "cpu#0", "host-a:11", 0, 1.25},
                      {32, 64, 690, "cpu#1", "host<b>:12", 4096, 1.5}};
  const std::string html = ResultSections(*j.result);
  EXPECT_THAT(html, HasSubstr("<h2>Shards</h2>"));
  EXPECT_THAT(html, HasSubstr("[32, 64)"));
  EXPECT_THAT(html, HasSubstr("host&lt;b&gt;:12"));  // escaped
  EXPECT_THAT(html, HasSubstr("4096"));
  j.result->shards.resize(1);  // one piece, nothing read: no section
  EXPECT_THAT(ResultSections(*j.result), Not(HasSubstr("<h2>Shards</h2>")));
}

TEST(JobSectionsTest, OneShardReadFromDiskIsListed) {
  types::EvalResult r = Result();
  r.shards = {{0, 4, 12, "cpu", "", 2048, 1.25}};
  EXPECT_THAT(ResultSections(r),
              HasSubstr("<h2>Shards</h2><table><tr><th>samples</th><th>blocks</th><th>device</th>"
                        "<th>server</th><th>bytes read</th><th>seconds</th></tr>"
                        "<tr><td>[0, 4)</td><td>12</td><td>cpu</td><td></td><td>2048</td>"
                        "<td>1.250</td></tr></table>"));
}

// Moved from views_test.cc (JobView there; the sections alone here).
// Every scalar of the result's field table has a row, so a metric added
// to the table shows on the page with no web edit.
TEST(JobSectionsTest, AllFieldsListsEveryScalarOfTheResultTable) {
  types::JobRecord j = Job("ev-11", "r", 6, 2.5);
  j.result->context_positions = 4321;
  j.result->target_fingerprint = "fp<1>";
  const std::string page = ResultSections(*j.result);
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

TEST(JobSectionsTest, TheHeadlineGivesTheCountsAndTheSemantics) {
  types::EvalResult r = Result();
  r.samples = 4;
  r.blocks = 200;
  r.tokens_scored = 800;
  r.family = "DFlash <1>";
  r.semantics = "zlab-current";
  const std::string html = ResultSections(r);
  EXPECT_THAT(html, HasSubstr("<h2>Result</h2><table>"
                              "<tr><th>accept length (pooled over blocks)</th>"
                              "<td>2.5 [2.3, 2.7]</td></tr>"
                              "<tr><th>tau (mean over samples)</th><td>2.4</td></tr>"
                              "<tr><th>samples / blocks / tokens</th><td>4 / 200 / 800</td></tr>"
                              "<tr><th>semantics</th><td>DFlash &lt;1&gt;, zlab-current</td></tr>"
                              "</table>"));
  // DFlash 1, no gate, no consistency measured: none of their rows.
  EXPECT_THAT(html, Not(HasSubstr("<th>selector")));
  EXPECT_THAT(html, Not(HasSubstr("<th>gate</th>")));
  EXPECT_THAT(html, Not(HasSubstr("<th>target consistency</th>")));
}

TEST(JobSectionsTest, TheGateVerdictIsColouredAndItsTextEscaped) {
  types::EvalResult r = Result();
  r.gate = types::GateVerdict{};
  r.gate->verdict = "worse";
  r.gate->text = "tau fell by 0.3 < -0.1 against <ev-0>";
  EXPECT_THAT(ResultSections(r),
              HasSubstr("<tr><th>gate</th><td><span class=\"worse\">tau fell by 0.3 &lt; -0.1 "
                        "against &lt;ev-0&gt;</span></td></tr>"));
  r.gate->verdict = "no reference";  // anything but "worse" is not a failure
  r.gate->text = "no reference job";
  EXPECT_THAT(ResultSections(r),
              HasSubstr("<td><span class=\"pass\">no reference job</span></td>"));
}

// Moved from views_test.cc (JobView there; the sections alone here).
TEST(JobSectionsTest, Dflash2JobShowsTheSelectorDiagnostics) {
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
  const std::string html = ResultSections(r);
  EXPECT_THAT(html, HasSubstr("<td>3 / 4.25</td>"));  // unary argmax / top-k oracle
  EXPECT_THAT(html, HasSubstr("<th>selector lift (with minus without)</th><td>+0.5</td>"));
  EXPECT_THAT(html, HasSubstr("<td>75.0% / 15.0% / 10.0%</td>"));  // coverage, ranking, all
  EXPECT_THAT(html, HasSubstr("<td>0.625</td><td>0.875</td><td>0.8125</td>"));
  EXPECT_THAT(html, HasSubstr("<th>tf-select</th>"));
  EXPECT_THAT(html, HasSubstr("draft-length curve"));
  EXPECT_EQ(Count(html, "<path class=\"series\""), 1);         // the greedy curve
  EXPECT_THAT(html, HasSubstr("<td>97.0% (97 of 100)</td>"));  // target consistency
}

TEST(JobSectionsTest, SelectorSharesOfNoBlocksAreZeroNotADivisionByZero) {
  types::EvalResult r = Result();
  r.selector_top_k = 2;
  r.blocks = 0;
  r.unary_accept_length_pooled = 2.75;  // lift 2.5 - 2.75
  const std::string html = ResultSections(r);
  EXPECT_THAT(html, HasSubstr("<tr><th>selector (top-k)</th><td>2</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<th>first miss: coverage / ranking / all accepted</th>"
                              "<td>0.0% / 0.0% / 0.0%</td>"));
  EXPECT_THAT(html, HasSubstr("<th>selector lift (with minus without)</th><td>-0.25</td>"));
  EXPECT_THAT(html, HasSubstr("<th>near-tie selector slots (&lt; 1e-4)</th><td>0</td>"));
}

// Cut at the first miss (positions_to_first_miss) the marginal columns were
// not measured; a position no block reached has no rate at all.
TEST(JobSectionsTest, PositionsShowOnlyWhatWasMeasured) {
  types::EvalResult r = Result();
  r.selector_top_k = 4;
  r.positions_to_first_miss = true;
  types::PositionMetrics p;
  p.position = 1;
  p.counted = 5;
  p.accuracy = 0.9;
  p.acceptance = 0.5;
  p.conditional = 0.25;
  p.coverage = 0.7;
  r.positions = {p, types::PositionMetrics{}};
  r.positions[1].position = 2;
  const std::string html = ResultSections(r);
  EXPECT_THAT(html, HasSubstr("<tr><td>1</td><td>5</td><td>-</td><td>0.5</td><td>0.25</td>"
                              "<td>-</td><td>-</td><td>-</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>2</td><td>0</td><td>-</td><td>unavailable</td>"
                              "<td>unavailable</td><td>-</td><td>-</td><td>-</td></tr>"));
  r.positions_to_first_miss = false;
  EXPECT_THAT(ResultSections(r),
              HasSubstr("<tr><td>1</td><td>5</td><td>0.9</td><td>0.5</td><td>0.25</td>"
                        "<td>0</td><td>0.7</td><td>0</td></tr>"));
}

TEST(JobSectionsTest, SampledSettingsGetARowAndALineOnTheCurve) {
  types::EvalResult r = Result();
  r.draft_length_curve = {1.5, 2.5};
  types::SampledAcceptance s;
  s.setting.temperature = 0.6;
  s.setting.top_p = 0.9;
  s.setting.engine = "<vllm>";
  s.expected_accept_length_pooled = 2.25;
  s.accept_length_ci = types::Interval{2.0, 2.5};
  s.expected_tau = 2.125;
  s.draft_length_curve = {1.25, 2.25};
  r.sampling = {s};
  const std::string html = ResultSections(r);
  EXPECT_THAT(html, HasSubstr("<h2>Sampled acceptance</h2><table><tr><th>setting</th>"
                              "<th>expected accept length</th><th>expected tau</th></tr>"
                              "<tr><td>t=0.6,p=0.9 (&lt;vllm&gt;)</td><td>2.25 [2, 2.5]</td>"
                              "<td>2.125</td></tr></table>"));
  EXPECT_EQ(Count(html, "<path class=\"series\""), 2);
  EXPECT_THAT(html, HasSubstr("data-name=\"greedy\""));
  EXPECT_THAT(html, HasSubstr("data-name=\"expected at t=0.6,p=0.9 (&lt;vllm&gt;)\""));
  EXPECT_THAT(html, Not(HasSubstr("<vllm>")));
}

TEST(JobSectionsTest, SlicesAreListedWithTheirIntervals) {
  types::EvalResult r = Result();
  types::SliceResult s{"category", "<code>", 3, 40, 2.75, 2.5};
  s.accept_length_ci = types::Interval{2.5, 3.0};
  r.slices = {s};
  EXPECT_THAT(ResultSections(r),
              HasSubstr("<h2>Slices</h2><table><tr><th>slice</th><th>samples</th><th>blocks</th>"
                        "<th>accept length</th><th>tau</th></tr><tr><td>category=&lt;code&gt;</td>"
                        "<td>3</td><td>40</td><td>2.75 [2.5, 3]</td><td>2.5</td></tr></table>"));
}

TEST(JobSectionsTest, AnEmptyResultHasNoOptionalSectionsOrCharts) {
  const std::string html = ResultSections(types::EvalResult{});
  EXPECT_THAT(html, HasSubstr("<h2>Result</h2>"));
  EXPECT_THAT(html, HasSubstr("<summary>All fields</summary>"));
  EXPECT_THAT(html, Not(HasSubstr("<svg")));  // no positions, histogram or curve to draw
  for (const char* section : {"Sampled acceptance", "Slices", "Shards", "Dataset "}) {
    EXPECT_THAT(html, Not(HasSubstr(absl::StrCat("<h2>", section)))) << section;
  }
  EXPECT_THAT(html, Not(HasSubstr("warning:")));
}

TEST(JobSectionsTest, ASuiteShowsEachDatasetInItsOwnSectionAndTheWarnings) {
  types::EvalResult r = Result();
  r.suite = "<d1>,d2";
  for (const char* d : {"<d1>", "d2"}) {
    r.suite_results.push_back({d, {}});
    r.suite_results.back().result.accept_length_pooled = 1.5;
  }
  r.suite_results[1].result.warnings = {"d2 skipped <3> samples"};
  r.warnings = {"macro mean over 2 datasets"};
  const std::string html = ResultSections(r);
  EXPECT_EQ(Count(html, "<h2>Result</h2>"), 3);  // the macro mean, then each dataset
  EXPECT_THAT(html, HasSubstr("<h2>Dataset &lt;d1&gt;</h2><h2>Result</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Dataset d2</h2><h2>Result</h2>"));
  EXPECT_LT(html.find("<h2>Dataset &lt;d1&gt;</h2>"), html.find("<h2>Dataset d2</h2>"));
  EXPECT_THAT(html, HasSubstr("<p class=\"note\">warning: d2 skipped &lt;3&gt; samples</p>"));
  // The suite's own warnings come last, after every dataset's section.
  EXPECT_THAT(html, EndsWith("<p class=\"note\">warning: macro mean over 2 datasets</p>"));
}

}  // namespace
}  // namespace dflash::web
