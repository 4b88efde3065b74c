// The web view end to end: a real server with --http-listen, runs made
// through the real client (several steps, a gate verdict, a suite, a
// DFlash 2 job, sampled acceptance, a running job, a run named like a
// script), every page opened in headless Chromium (Debian's chromium): the
// DOM holds the JSON twin's and the CLI's numbers, the run chart one line
// per dataset, a running job's progress updated by its polling script, no
// console errors; bad requests get a readable 400/404/414 and the server
// keeps serving. Screenshots of the run and compare pages land in
// test-artifacts/ next to the test binary (docs/images/ holds copies).
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"
#include "test_util/text_count.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::CommandResult;
using ::dflash::testing::MakeLongDataset;
using ::dflash::testing::RunCommand;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;
using ::dflash::testing::Count;

const char kEvil[] = "<script>alert(1)</script>";

class WebE2eTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    ports_ = new dflash::testing::TempDir();
    SetUpTinyServer({"--http-listen", "127.0.0.1:0", "--http-port-file", ports_->Join("http")});
    std::ifstream in(ports_->Join("http"));
    in >> http_port_;
    ASSERT_GT(http_port_, 0);
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-split", "--name", "ds"}).exit_code, 0);
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset2", "--name", "d2"}).exit_code, 0);
    const auto eval = [](std::vector<std::string> args) {
      args.insert(args.begin(), "eval");
      args.push_back("--progress");
      args.push_back("none");
      return Cli(args);
    };
    ASSERT_EQ(
        eval({"--drafter", "m", "--dataset", "d", "--run", "web-run", "--step", "100"}).exit_code,
        0);
    ASSERT_EQ(
        eval({"--drafter", "m", "--dataset", "d", "--run", "web-run", "--step", "200"}).exit_code,
        0);
    // Far worse weights: the gate says so and the run chart marks it.
    ASSERT_EQ(eval({"--checkpoint", data_ + "/drafter-v1new", "--dataset", "d", "--run", "web-run",
                    "--step", "300", "--gate", "previous"})
                  .exit_code,
              4);
    for (const char* step : {"1", "2"}) {
      ASSERT_EQ(eval({"--drafter", "m", "--dataset", "d,ds", "--run", "suite-run", "--step", step})
                    .exit_code,
                0);
    }
    ASSERT_EQ(eval({"--checkpoint", data_ + "/drafter2", "--dataset", "d2", "--run", "dflash2",
                    "--step", "1"})
                  .exit_code,
              0);
    ASSERT_EQ(eval({"--drafter", "m", "--dataset", "d", "--run", kEvil, "--step", "1"}).exit_code,
              0);
    // Sampled acceptance, target consistency and the draft-length curve need
    // a dataset with the target's final hidden state.
    ASSERT_EQ(Cli({"load-target", data_ + "/target", "--name", "tn", "--final-norm"}).exit_code, 0);
    ASSERT_EQ(
        Cli({"load-dataset", data_ + "/dataset-final", "--name", "df", "--target", "tn"}).exit_code,
        0);
    for (const char* step : {"1", "2"}) {
      ASSERT_EQ(eval({"--drafter", "m", "--dataset", "df", "--target", "tn", "--anchors", "all",
                      "--sampling", "t=0", "--sampling", "t=0.6,p=0.95,k=20", "--run",
                      "sampled-run", "--step", step})
                    .exit_code,
                0);
    }
  }
  static void TearDownTestSuite() {
    TinyServerTest::TearDownTestSuite();
    delete ports_;
    ports_ = nullptr;
  }

  static std::string Url(const std::string& path) {
    return absl::StrFormat("http://127.0.0.1:%d%s", http_port_, path);
  }
  // The page's DOM after Chromium ran it; console messages go to `console`.
  // With `virtual_ms`, timers run that many virtual milliseconds first.
  static std::string Dom(const std::string& path, std::string* console = nullptr,
                         int virtual_ms = 0) {
    std::vector<std::string> args = {
        "/usr/bin/chromium",       "--headless", "--no-sandbox", "--disable-gpu",
        "--enable-logging=stderr", "--v=0"};
    if (virtual_ms > 0) args.push_back(absl::StrFormat("--virtual-time-budget=%d", virtual_ms));
    args.push_back("--dump-dom");
    args.push_back(Url(path));
    CommandResult r = RunCommand(args, {}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (console) *console = r.err;
    return r.out;
  }
  static void Screenshot(const std::string& path, const std::string& file) {
    fs::create_directories("test-artifacts");
    CommandResult r =
        RunCommand({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--window-size=1000,1300", "--screenshot=test-artifacts/" + file, Url(path)},
                   {}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists("test-artifacts/" + file));
  }

 public:
  // HTTP status and body (curl: what a script sees).
  static std::pair<int, std::string> GetPath(const std::string& path) {
    CommandResult r = RunCommand({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", Url(path)});
    const size_t nl = r.out.rfind('\n');
    return {std::stoi(r.out.substr(nl + 1)), r.out.substr(0, nl)};
  }
  static json Twin(const std::string& path) {
    auto [status, body] = GetPath("/api" + path);
    EXPECT_EQ(status, 200) << body;
    return json::parse(body);
  }
  // "2.346" as the page writes numbers (4 significant digits).
  static std::string Num(double v) { return absl::StrFormat("%.4g", v); }

 protected:
  static dflash::testing::TempDir* ports_;
  static int http_port_;
};

dflash::testing::TempDir* WebE2eTest::ports_ = nullptr;
int WebE2eTest::http_port_ = 0;

// Chromium reports script errors on stderr as console messages.
void ExpectNoConsoleErrors(const std::string& console) {
  EXPECT_THAT(console, Not(HasSubstr("Uncaught"))) << console;
  EXPECT_THAT(console, Not(HasSubstr(":CONSOLE("))) << console;
}

TEST_F(WebE2eTest, RunsPageListsEveryRunWithItsBestStep) {
  std::string console;
  const std::string dom = Dom("/", &console);
  ExpectNoConsoleErrors(console);
  const json twin = Twin("/runs");
  ASSERT_EQ(twin.size(), 5u) << twin.dump();
  for (const json& run : twin) {
    const std::string name = run["run"];
    if (name == kEvil) continue;
    EXPECT_THAT(dom, HasSubstr(">" + name + "</a>"));
    if (name == "web-run") {
      EXPECT_EQ(run["best_step"], 100);  // 100 and 200 tie (same weights); 300 is worse
      EXPECT_THAT(dom,
                  HasSubstr(absl::StrFormat("<td>100 (%s)</td>", Num(run["best_accept_length"]))));
    }
  }
  // The script-named run is text in the DOM, never an element.
  EXPECT_THAT(dom, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(dom, Not(HasSubstr(kEvil)));
}

TEST_F(WebE2eTest, RunPageDrawsTheCurveWithIntervalsAndTheJobs) {
  std::string console;
  const std::string dom = Dom("/runs/web-run", &console);
  ExpectNoConsoleErrors(console);
  const json twin = Twin("/runs/web-run");
  ASSERT_EQ(twin["jobs"].size(), 3u);
  EXPECT_EQ(Count(dom, "<path class=\"series\""), 2);  // accept length and tau, one line each
  EXPECT_EQ(Count(dom, "<polygon class=\"band\""), 2);
  EXPECT_EQ(Count(dom, "stroke=\"#b00\""), 2);  // the worse gate at step 300, on both charts
  for (const json& j : twin["jobs"]) {
    EXPECT_THAT(dom, HasSubstr(">" + j["id"].get<std::string>() + "</a>"));
    EXPECT_THAT(dom, HasSubstr(Num(j["accept_length"])));
  }
  EXPECT_THAT(dom, HasSubstr("<span class=\"worse\">worse</span>"));
  Screenshot("/runs/web-run", "web-run.png");
  // A suite: one line per dataset plus the macro mean, on both charts.
  const std::string suite = Dom("/runs/suite-run");
  EXPECT_EQ(Count(suite, "<path class=\"series\""), 6) << suite;
  EXPECT_THAT(suite, HasSubstr("data-name=\"ds\""));
}

TEST_F(WebE2eTest, JobPagesShowTheResultAsTheCliDoes) {
  const json run = Twin("/runs/dflash2");
  const std::string id = run["jobs"][0]["id"];
  std::string console;
  const std::string dom = Dom("/jobs/" + id, &console);
  ExpectNoConsoleErrors(console);
  json cli = CliJson({"results", id});
  EXPECT_THAT(dom, HasSubstr(Num(cli["acceptLengthPooled"].get<double>())));
  EXPECT_THAT(dom, HasSubstr("first miss: coverage / ranking / all accepted"));
  EXPECT_THAT(dom, HasSubstr("accept length: unary argmax / top-k oracle"));
  EXPECT_THAT(dom, HasSubstr("<h2>Recipe r64:"));
  EXPECT_THAT(dom, HasSubstr("context=0-512"));
  // DFlash 2: the selector's lift over the unary argmax, its per-position columns.
  const double lift =
      cli["acceptLengthPooled"].get<double>() - cli["unaryAcceptLengthPooled"].get<double>();
  EXPECT_THAT(dom, HasSubstr(absl::StrFormat(
                       "<th>selector lift (with minus without)</th><td>%+.4g</td>", lift)));
  EXPECT_THAT(dom, HasSubstr("<th>coverage</th><th>tf-select</th>"));
  const json twin = Twin("/jobs/" + id);
  EXPECT_EQ(twin["id"], id);
  EXPECT_EQ(twin["result"]["accept_length_pooled"].get<double>(),
            cli["acceptLengthPooled"].get<double>());
}

TEST_F(WebE2eTest, SampledAcceptanceIsOnTheRunAndTheJobPages) {
  std::string console;
  const std::string run_dom = Dom("/runs/sampled-run", &console);
  ExpectNoConsoleErrors(console);
  const json run = Twin("/runs/sampled-run");
  // Settings spelled as the CLI prints them, the drafter's policy included.
  EXPECT_EQ(run["series"], json({"accept length", "expected at t=0 sample",
                                 "expected at t=0.6,p=0.95,k=20 sample"}));
  // Greedy and the two settings, on the accept-length and the tau chart.
  EXPECT_EQ(Count(run_dom, "<path class=\"series\""), 6) << run_dom;
  EXPECT_EQ(Count(run_dom, "data-name=\"expected at t=0.6,p=0.95,k=20 sample\""), 2);
  const std::string id = run["jobs"][1]["id"];
  const std::string dom = Dom("/jobs/" + id, &console);
  ExpectNoConsoleErrors(console);
  const json cli = CliJson({"results", id});
  const json& tc = cli["targetConsistency"];
  EXPECT_THAT(dom, HasSubstr(absl::StrFormat("<td>%.1f%% (%d of %d)</td>",
                                             100 * tc["fraction"].get<double>(),
                                             dflash::testing::JsonInt(tc["matches"]),
                                             dflash::testing::JsonInt(tc["positions"]))));
  ASSERT_EQ(cli["sampling"].size(), 2u);
  EXPECT_THAT(dom, HasSubstr(absl::StrCat(
                       "<td>t=0.6,p=0.95,k=20 sample</td><td>",
                       Num(cli["sampling"][1]["expectedAcceptLengthPooled"].get<double>()))));
  // The draft-length curve: greedy plus one line per setting.
  EXPECT_THAT(dom, HasSubstr("draft-length curve"));
  EXPECT_THAT(dom, HasSubstr("data-name=\"greedy\""));
  EXPECT_EQ(Count(dom, "<path class=\"series\""), 3);
}

TEST_F(WebE2eTest, ComparePageShowsPairedDifferences) {
  const json run = Twin("/runs/web-run");
  const std::string a = run["jobs"][0]["id"], c = run["jobs"][2]["id"];
  std::string console;
  const std::string dom = Dom("/compare?jobs=" + a + "," + c, &console);
  ExpectNoConsoleErrors(console);
  const json twin = Twin("/compare?jobs=" + a + "," + c);
  ASSERT_FALSE(twin["differences"].empty()) << twin.dump();
  EXPECT_EQ(twin["differences"][0]["metric"], "accept_length");
  EXPECT_EQ(twin["differences"][0]["verdict"], "worse");
  EXPECT_THAT(dom, HasSubstr("Paired differences against " + a));
  EXPECT_THAT(dom, HasSubstr("<span class=\"worse\">worse</span>"));
  Screenshot("/compare?jobs=" + a + "," + c, "web-compare.png");
  // Two jobs of the same weights: no detectable difference.
  const std::string b = run["jobs"][1]["id"];
  EXPECT_THAT(Dom("/compare?jobs=" + a + "," + b), HasSubstr("no detectable difference"));
}

TEST_F(WebE2eTest, ResidentObjectsPage) {
  const std::string dom = Dom("/resources");
  const json twin = Twin("/resources");
  EXPECT_GE(twin["resources"].size(), 4u);
  for (const json& r : twin["resources"]) {
    EXPECT_THAT(dom, HasSubstr("<td>" + r["name"].get<std::string>() + "</td>"));
  }
}

// A refused request: the page has the status, the message (escaped) and
// a link back; the JSON twin the same status and the message itself.
void ExpectRefused(const std::string& path, int status, const std::string& message) {
  auto [code, body] = WebE2eTest::GetPath(path);
  EXPECT_EQ(code, status) << path;
  EXPECT_THAT(body, HasSubstr(absl::StrCat("<h1>Error ", status, "</h1><p class=\"error\">")))
      << path;
  EXPECT_THAT(body, HasSubstr(absl::StrCat("<p class=\"error\">", message, "</p>"))) << path;
  EXPECT_THAT(body, HasSubstr("<a href=\"/\">back to the runs</a>")) << path;
}

void ExpectRefusedJson(const std::string& path, int status, const std::string& message) {
  auto [code, body] = WebE2eTest::GetPath("/api" + path);
  EXPECT_EQ(code, status) << path;
  EXPECT_EQ(json::parse(body), json({{"status", status}, {"error", message}})) << path;
}

TEST_F(WebE2eTest, BadRequestsGetReadablePagesAndTheServerKeepsServing) {
  ExpectRefused("/jobs/ev-no-such-job", 404, "NOT_FOUND: no job with id &#39;ev-no-such-job&#39;");
  ExpectRefusedJson("/jobs/ev-no-such-job", 404, "NOT_FOUND: no job with id 'ev-no-such-job'");
  ExpectRefused("/runs/no-such-run", 404, "no run named &#39;no-such-run&#39;");
  ExpectRefusedJson("/runs/no-such-run", 404, "no run named 'no-such-run'");
  ExpectRefused("/no/such/page", 404, "no page at &#39;/no/such/page&#39;");
  ExpectRefused("/runs/web-run?step=abc", 400, "step &#39;abc&#39; is not an integer");
  ExpectRefusedJson("/runs/web-run?step=abc", 400, "step 'abc' is not an integer");
  ExpectRefused("/compare?jobs=only-one", 400,
                "compare needs 2 to 16 job ids: /compare?jobs=ID,ID; got 1");
  ExpectRefused("/compare", 400, "compare needs 2 to 16 job ids: /compare?jobs=ID,ID; got 0");
  // Malformed escapes are taken as text: an unknown job.
  ExpectRefused("/compare?jobs=%zz%,x", 404, "NOT_FOUND: no job with id &#39;%zz%&#39;");
  // A long query under the URI limit: 2000 ids, too many to compare.
  std::string many = "a";
  for (int k = 1; k < 2000; ++k) many += ",a";
  ExpectRefused("/compare?jobs=" + many, 400,
                "compare needs 2 to 16 job ids: /compare?jobs=ID,ID; got 2000");
  // Over the URI limit (8192 bytes), in the path or the query: 414.
  ExpectRefused("/runs/" + std::string(20000, 'x'), 414, "the request was refused (HTTP 414)");
  ExpectRefused("/compare?jobs=" + std::string(20000, 'x'), 414,
                "the request was refused (HTTP 414)");
  // Still serving, on HTTP and gRPC.
  EXPECT_EQ(GetPath("/").first, 200);
  EXPECT_EQ(Cli({"info"}).exit_code, 0);
}

// Kept last: the job it leaves running (then cancels) would be one more run
// for the tests above.
TEST_F(WebE2eTest, ARunningJobsPageShowsProgressAndItsScriptUpdatesIt) {
  // A long job (minutes): the tiny dataset's samples, 400 of them (hard links).
  const std::string big = data_ + "/big-web";
  MakeLongDataset(data_, big);
  ASSERT_EQ(Cli({"load-dataset", big, "--name", "big"}).exit_code, 0);
  CommandResult detached =
      Cli({"eval", "--detach", "--drafter", "m", "--dataset", "big", "--target", "t", "--anchors",
           "all", "--run", "live-run", "--step", "1"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  const std::string id = detached.out.substr(0, detached.out.find_first_of(" \n"));
  json before;
  for (int i = 0; i < 1000; ++i) {  // until it runs
    before = Twin("/jobs/" + id);
    if (before["state"] == "RUNNING") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(before["state"], "RUNNING") << before.dump();
  // Three virtual seconds: the script polls the twin once (at two).
  std::string console;
  const std::string dom = Dom("/jobs/" + id, &console, 3000);
  ExpectNoConsoleErrors(console);
  EXPECT_THAT(dom, HasSubstr("<span id=\"state\">RUNNING</span>"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m,
                                std::regex("<span id=\"progress\" data-polls=\"([0-9]+)\">([0-9]+) "
                                           "of (?:\xE2\x89\xA4)?([0-9]+) blocks, ([0-9]+) of "
                                           "([0-9]+) samples</span>")))
      << dom;
  EXPECT_GE(std::stoi(m[1]), 1);  // updated by the script, not only rendered
  EXPECT_GE(std::stoll(m[2]), before["progress"][0].get<int64_t>());
  EXPECT_EQ(std::stoll(m[3]), before["progress"][1].get<int64_t>());
  EXPECT_EQ(std::stoll(m[5]), before["progress"][3].get<int64_t>());
  // The runs page counts it; its run lists it as RUNNING.
  for (const json& run : Twin("/runs")) {
    if (run["run"] == "live-run") EXPECT_EQ(run["running"], 1);
  }
  EXPECT_EQ(Twin("/runs/live-run")["jobs"][0]["state"], "RUNNING");
  EXPECT_EQ(Cli({"cancel", id}).exit_code, 0);
}

}  // namespace
}  // namespace dflash
