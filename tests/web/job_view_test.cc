// One job's page (web/job_view.cc): what was asked and its state, the run
// link, the progress of a live job and the script that polls its twin, the
// error of a failed one, the result and its recipe once it finished, every
// user-given string shown as text.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/recipe.h"
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

// Moved from views_test.cc.
TEST(JobViewTest, JobPageShowsTheResultAndItsRecipe) {
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

// Moved from views_test.cc.
TEST(JobViewTest, ARunningJobShowsProgressAndPollsItsTwin) {
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

TEST(JobViewTest, AQueuedJobPollsAndShowsAnExactTotal) {
  types::JobRecord j = Job("ev-q", "", 0, 0);
  j.result.reset();
  j.state = types::JobState::kQueued;
  j.progress.blocks_total = 10;
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html, HasSubstr("<span id=\"state\">QUEUED</span>"));
  EXPECT_THAT(page.html, HasSubstr("<span id=\"progress\" data-polls=\"0\">0 of 10 blocks, "
                                   "0 of 0 samples</span>"));
  EXPECT_EQ(Count(page.html, "<script>"), 1);
  EXPECT_THAT(page.html, Not(HasSubstr("<th>run / step</th>")));  // not part of a run
  EXPECT_THAT(page.html, Not(HasSubstr("<h2>Result</h2>")));
}

TEST(JobViewTest, AFailedJobShowsItsErrorAsTextAndDoesNotPoll) {
  types::JobRecord j = Job("ev-f", "r", 5, 0);
  j.result.reset();
  j.state = types::JobState::kFailed;
  j.error_message = "tensor '<fc>' has shape [2]; expected [3]";
  j.create_unix_micros = 1700000000LL * 1000000;
  j.end_unix_micros = 1700000061LL * 1000000;
  j.device = "cpu";
  j.dtype = "fp32";
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html,
              HasSubstr("<tr><th>error</th><td>tensor &#39;&lt;fc&gt;&#39; has shape [2]; "
                        "expected [3]</td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<span id=\"state\">FAILED</span>"));
  EXPECT_THAT(page.html, HasSubstr("<tr><th>created</th><td>2023-11-14 22:13:20Z</td></tr>"
                                   "<tr><th>ended</th><td>2023-11-14 22:14:21Z</td></tr>"
                                   "<tr><th>device</th><td>cpu fp32</td></tr>"));
  EXPECT_THAT(page.html, Not(HasSubstr("<script")));
  EXPECT_THAT(page.html, Not(HasSubstr("id=\"progress\"")));
  EXPECT_THAT(page.html, Not(HasSubstr("<h2>Recipe")));
  EXPECT_EQ(page.json["state"], "FAILED");
  EXPECT_EQ(page.json["error_message"], j.error_message);
}

TEST(JobViewTest, WhatWasAskedIsShownAsTextWithTheRunLinked) {
  types::JobRecord j = Job("ev-<1>", "run a/<b>", 4000, 2.0);
  j.request.params.drafter = "";  // a one-shot checkpoint: its path is shown
  j.request.params.checkpoint_path = "/data/<ckpt>";
  j.request.params.dataset = "mt&bench";
  j.request.params.target = "qwen\"3\"";
  const WebPage page = JobView(j);
  EXPECT_THAT(page.html, HasSubstr("<tr><th>drafter</th><td>/data/&lt;ckpt&gt;</td></tr>"
                                   "<tr><th>dataset</th><td>mt&amp;bench</td></tr>"
                                   "<tr><th>target</th><td>qwen&quot;3&quot;</td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<tr><th>run / step</th><td><a href=\"/runs/run%20a%2F%3Cb%3E\">"
                                   "run a/&lt;b&gt;</a> / 4000</td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<title>Job ev-&lt;1&gt; - dflash-evald</title>"));
  EXPECT_THAT(page.html, HasSubstr("<a href=\"/api/jobs/ev-%3C1%3E\">JSON</a>"));
  EXPECT_THAT(page.html, Not(HasSubstr("<ckpt>")));
  EXPECT_EQ(page.json["id"], "ev-<1>");

  j.request.params.drafter = "step-<4000>";  // a resident drafter's name wins
  EXPECT_THAT(JobView(j).html, HasSubstr("<tr><th>drafter</th><td>step-&lt;4000&gt;</td></tr>"));
}

// The poll script embeds the id: percent-encoded, so no id can end the
// script or the string it sits in.
TEST(JobViewTest, ThePollScriptHoldsTheIdPercentEncoded) {
  types::JobRecord j = Job("x'</script><b>", "r", 1, 0);
  j.result.reset();
  j.state = types::JobState::kRunning;
  const std::string html = JobView(j).html;
  EXPECT_THAT(html, HasSubstr("fetch('/api/jobs/x%27%3C%2Fscript%3E%3Cb%3E',"));
  EXPECT_EQ(Count(html, "</script>"), 1);
  EXPECT_THAT(html, Not(HasSubstr("<b>")));
}

TEST(JobViewTest, TheRecipeTableListsTheRecipeOfAFinishedJob) {
  types::JobRecord j = Job("ev-r", "r", 5, 2.0);
  j.result->dataset_fingerprint = "ds<fp>";
  const core::Recipe recipe = core::RecipeOf(j);
  ASSERT_FALSE(recipe.fields.empty());
  const std::string html = JobView(j).html;
  EXPECT_THAT(html, HasSubstr(absl::StrCat("<h2>Recipe ", recipe.fingerprint,
                                           "</h2><table><tr><th>field</th><th>value</th></tr>")));
  EXPECT_THAT(html, Not(HasSubstr("ds<fp>")));
  const size_t at = html.find("<h2>Recipe ");
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  EXPECT_EQ(Count(table, "<tr><td>"), static_cast<int>(recipe.fields.size()));
}

}  // namespace
}  // namespace dflash::web
