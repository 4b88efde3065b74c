// The web view end to end: a real server with --http-listen, runs made
// through the real client (several steps, a gate verdict, a suite, a
// DFlash 2 job, a run named like a script), every page opened in headless
// Chromium (Debian's chromium): the DOM holds the JSON twin's numbers, the
// run chart one line per dataset, no console errors; bad requests get a
// readable 400/404 and the server keeps serving. Screenshots of the run and
// compare pages land in test-artifacts/ next to the test binary.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::CommandResult;
using ::dflash::testing::RunCommand;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const char kEvil[] = "<script>alert(1)</script>";

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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
  static std::string Dom(const std::string& path, std::string* console = nullptr) {
    CommandResult r =
        RunCommand({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--enable-logging=stderr", "--v=0", "--dump-dom", Url(path)},
                   {}, 60);
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
  // HTTP status and body (curl: what a script sees).
  static std::pair<int, std::string> Get(const std::string& path) {
    CommandResult r = RunCommand({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", Url(path)});
    const size_t nl = r.out.rfind('\n');
    return {std::stoi(r.out.substr(nl + 1)), r.out.substr(0, nl)};
  }
  static json Twin(const std::string& path) {
    auto [status, body] = Get("/api" + path);
    EXPECT_EQ(status, 200) << body;
    return json::parse(body);
  }
  // "2.346" as the page writes numbers (4 significant digits).
  static std::string Num(double v) { return absl::StrFormat("%.4g", v); }

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
  ASSERT_EQ(twin.size(), 4u) << twin.dump();
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
  const json twin = Twin("/jobs/" + id);
  EXPECT_EQ(twin["id"], id);
  EXPECT_EQ(twin["result"]["accept_length_pooled"].get<double>(),
            cli["acceptLengthPooled"].get<double>());
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

TEST_F(WebE2eTest, BadRequestsGetReadablePagesAndTheServerKeepsServing) {
  auto [missing_job, body] = Get("/jobs/ev-no-such-job");
  EXPECT_EQ(missing_job, 404);
  EXPECT_THAT(body, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(body, HasSubstr("back to the runs"));
  EXPECT_EQ(Get("/runs/no-such-run").first, 404);
  EXPECT_EQ(Get("/no/such/page").first, 404);
  EXPECT_EQ(Get("/runs/web-run?step=abc").first, 400);
  auto [one, one_body] = Get("/compare?jobs=only-one");
  EXPECT_EQ(one, 400);
  EXPECT_THAT(one_body, HasSubstr("compare needs 2 to 16 job ids"));
  EXPECT_EQ(Get("/compare?jobs=%zz%,,,").first, 400);  // malformed escapes
  auto [huge, huge_body] = Get("/runs/" + std::string(20000, 'x'));
  EXPECT_EQ(huge, 414);
  EXPECT_THAT(huge_body, HasSubstr("the request was refused (HTTP 414)"));
  EXPECT_EQ(Get("/api/jobs/ev-no-such-job").first, 404);
  EXPECT_EQ(Get("/").first, 200);
  EXPECT_EQ(Cli({"info"}).exit_code, 0);
}

}  // namespace
}  // namespace dflash
