// The compare page, the resident objects page and the error page
// (web/compare_view.cc): jobs side by side with their deltas, the paired
// differences with their verdicts, warnings, the resident objects and their
// total, error pages with their status; every user-given string as text.
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

// Jobs "a" (step 100, drafter "d-<100>") and "b<2>" (step 200, a one-shot
// checkpoint), accept length 2.5 and 2.75, tau 2.25 and 2.5.
core::Comparison TwoJobs() {
  core::Comparison c;
  c.jobs = {Job("a", "r", 100, 2.5), Job("b<2>", "r", 200, 2.75)};
  c.jobs[0].request.params.drafter = "d-<100>";
  c.jobs[1].request.params.checkpoint_path = "/ckpt/<200>";
  c.accept_length = {2.5, 2.75};
  c.accept_length_delta = {0, 0.25};
  c.tau = {2.25, 2.5};
  return c;
}

TEST(CompareViewTest, JobsSideBySideWithTheDeltaAgainstTheFirst) {
  const WebPage page = CompareView(TwoJobs());
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.html,
              HasSubstr("<table><tr><th>job</th><th>drafter</th><th>step</th>"
                        "<th>accept length</th><th>delta</th><th>tau</th></tr>"
                        "<tr><td><a href=\"/jobs/a\">a</a></td><td>d-&lt;100&gt;</td><td>100</td>"
                        "<td>2.5</td><td></td><td>2.25</td></tr>"
                        "<tr><td><a href=\"/jobs/b%3C2%3E\">b&lt;2&gt;</a></td>"
                        "<td>/ckpt/&lt;200&gt;</td><td>200</td><td>2.75</td><td>0.25</td>"
                        "<td>2.5</td></tr></table>"));
  EXPECT_THAT(page.html, Not(HasSubstr("Paired differences")));  // none computed
  EXPECT_THAT(page.html, HasSubstr("<a href=\"/api/compare?jobs=a%2Cb%3C2%3E\">JSON</a>"));
  EXPECT_EQ(page.json["jobs"],
            json::parse(R"([{"id":"a","step":100,"accept_length":2.5,"accept_length_delta":0.0,
                             "tau":2.25},
                            {"id":"b<2>","step":200,"accept_length":2.75,
                             "accept_length_delta":0.25,"tau":2.5}])"));
  EXPECT_EQ(page.json["differences"], json::array());
  EXPECT_EQ(page.json["warnings"], json::array());
}

TEST(CompareViewTest, PairedDifferencesCarryTheirIntervalsAndVerdicts) {
  core::Comparison c = TwoJobs();
  c.jobs.push_back(Job("c", "r", 300, 2.0));
  c.accept_length.push_back(2.0);
  c.accept_length_delta.push_back(-0.5);
  c.tau.push_back(1.75);
  c.differences = {
      {"accept_length", 1, 2.5, 2.75, 0.25, types::Interval{0.125, 0.375}, true, "better"},
      {"tau", 2, 2.25, 1.75, -0.5, types::Interval{-0.75, -0.25}, true, "worse"},
      {"acceptance[<1>]", 1, 0.5, 0.5, 0, std::nullopt, false, "undefined"}};
  c.warnings = {"samples <7> differ"};
  const WebPage page = CompareView(c);
  EXPECT_THAT(page.html, HasSubstr("<h2>Paired differences against a (95% paired bootstrap)</h2>"));
  EXPECT_THAT(page.html,
              HasSubstr("<tr><td>accept_length</td><td>b&lt;2&gt;</td><td>2.5</td><td>2.75</td>"
                        "<td>0.25 [0.125, 0.375]</td><td><span class=\"pass\">better</span></td>"
                        "</tr>"));
  EXPECT_THAT(page.html,
              HasSubstr("<tr><td>tau</td><td>c</td><td>2.25</td><td>1.75</td>"
                        "<td>-0.5 [-0.75, -0.25]</td><td><span class=\"worse\">worse</span></td>"
                        "</tr>"));
  EXPECT_THAT(page.html,
              HasSubstr("<tr><td>acceptance[&lt;1&gt;]</td><td>b&lt;2&gt;</td><td>0.5</td>"
                        "<td>0.5</td><td>0</td><td><span class=\"note\">undefined</span></td>"
                        "</tr>"));
  EXPECT_THAT(page.html, HasSubstr("<p class=\"note\">warning: samples &lt;7&gt; differ</p>"));
  EXPECT_THAT(page.html, HasSubstr("/api/compare?jobs=a%2Cb%3C2%3E%2Cc\""));
  ASSERT_EQ(page.json["differences"].size(), 3u);
  EXPECT_EQ(page.json["differences"][1],
            json::parse(R"({"metric":"tau","job":"c","reference_value":2.25,"value":1.75,
                            "delta":-0.5,"delta_ci":[-0.75,-0.25],"verdict":"worse"})"));
  EXPECT_EQ(page.json["differences"][2]["delta_ci"], json(nullptr));
  EXPECT_EQ(page.json["warnings"], json({"samples <7> differ"}));
  EXPECT_EQ(Count(page.html, "<span class="), 3);
}

TEST(CompareViewTest, ResidentObjectsAreListedWithTheirTotal) {
  std::vector<resident::ResourceInfo> resources(2);
  resources[0].kind = resident::ResourceKind::kTarget;
  resources[0].name = "qwen<3>";
  resources[0].device = "cpu";
  resources[0].dtype = "fp32";
  resources[0].bytes = 2048;
  resources[0].fingerprint = "sha256:ab";
  resources[0].source_path = "/data/<t>";
  resources[1].kind = resident::ResourceKind::kDataset;
  resources[1].name = "mt";
  resources[1].bytes = 952;
  core::ServerInfo info;
  info.server_version = "1.2.3";
  info.default_device = "cpu";
  info.intra_op_threads = 4;
  info.queued_jobs = 2;
  info.running_jobs = 1;
  const WebPage page = ResourcesView(resources, info);
  EXPECT_THAT(page.html, HasSubstr("<p>dflash-evald 1.2.3 on cpu, 4 threads; resident bytes 3000; "
                                   "jobs queued 2, running 1</p>"));
  EXPECT_THAT(page.html, HasSubstr("<tr><td>target</td><td>qwen&lt;3&gt;</td><td>cpu</td>"
                                   "<td>fp32</td><td>2048</td><td>sha256:ab</td>"
                                   "<td>/data/&lt;t&gt;</td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<tr><td>dataset</td><td>mt</td><td></td><td></td><td>952</td>"
                                   "<td></td><td></td></tr>"));
  EXPECT_THAT(page.html, HasSubstr("<a href=\"/api/resources\">JSON</a>"));
  EXPECT_EQ(page.json["resident_bytes"], 3000);
  EXPECT_EQ(page.json["queued_jobs"], 2);
  EXPECT_EQ(page.json["running_jobs"], 1);
  EXPECT_EQ(page.json["device"], "cpu");
  EXPECT_EQ(page.json["resources"][0],
            json::parse(R"({"kind":"target","name":"qwen<3>","device":"cpu","dtype":"fp32",
                            "bytes":2048,"fingerprint":"sha256:ab","source_path":"/data/<t>"})"));
}

TEST(CompareViewTest, NothingResidentIsAnEmptyTableAndZeroBytes) {
  core::ServerInfo info;
  info.server_version = "<v>";
  info.default_device = "cuda:0";
  const WebPage page = ResourcesView({}, info);
  EXPECT_THAT(page.html, HasSubstr("<p>dflash-evald &lt;v&gt; on cuda:0, 0 threads; resident "
                                   "bytes 0; jobs queued 0, running 0</p>"));
  EXPECT_EQ(Count(page.html, "<tr>"), 1);  // the header only
  EXPECT_EQ(page.json["resources"], json::array());
  EXPECT_EQ(page.json["resident_bytes"], 0);
}

// Moved from views_test.cc.
TEST(CompareViewTest, ErrorPagesSayWhyAndLinkBack) {
  const WebPage e = ErrorView(404, "no run named '<x>'");
  EXPECT_EQ(e.status, 404);
  EXPECT_THAT(e.html, HasSubstr("no run named &#39;&lt;x&gt;&#39;"));
  EXPECT_THAT(e.html, HasSubstr("<a href=\"/\">back to the runs</a>"));
  EXPECT_EQ(e.json["error"], "no run named '<x>'");
}

TEST(CompareViewTest, AnErrorPageHasItsStatusInTheTitleAndTheTwinAndNoJsonLink) {
  const WebPage e = ErrorView(400, "step 'x' is not an integer");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.json, json({{"status", 400}, {"error", "step 'x' is not an integer"}}));
  EXPECT_THAT(e.html, HasSubstr("<title>Error 400 - dflash-evald</title>"));
  EXPECT_THAT(e.html, HasSubstr("<h1>Error 400</h1><p class=\"error\">step &#39;x&#39; is not an "
                                "integer</p><p><a href=\"/\">back to the runs</a></p>"));
  EXPECT_THAT(e.html, Not(HasSubstr(">JSON</a>")));
}

}  // namespace
}  // namespace dflash::web
