// The job commands through the real binaries on the tiny fixture: eval
// (wait and --detach), status, results, list, history and compare (with
// their SVG charts), cancel, resubmit, and --json on each.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/text_count.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::ReadFileOrEmpty;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using json = nlohmann::json;
using ::dflash::testing::Count;

// Tags balance and there is one <svg> root (the unit test checks more).
void ExpectSvg(const std::string& svg, int series) {
  EXPECT_EQ(Count(svg, "<svg "), 1);
  EXPECT_EQ(Count(svg, "</svg>"), 1);
  EXPECT_EQ(Count(svg, "<g ") + Count(svg, "<g>"), Count(svg, "</g>"));
  EXPECT_EQ(Count(svg, "<text "), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<polyline "), series) << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

class JobsCliTest : public testing::TinyServerTest {
 protected:
  // Submits with --detach; returns the job id.
  static std::string Detached(std::vector<std::string> args) {
    args.insert(args.begin(), {"eval", "--detach"});
    CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, MatchesRegex("[^ \n]+\n"));
    return r.out.empty() ? "" : r.out.substr(0, r.out.size() - 1);
  }

  // Waits for the job (results --wait) and returns its result as JSON.
  static json WaitResult(const std::string& id) {
    return CliJson({"results", id, "--wait", "--progress", "none"});
  }
};

TEST_F(JobsCliTest, EvalWaitsThenPrintsTheResultAndTheJobId) {
  CommandResult r =
      Cli({"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay", "--detail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("^job ([^ \n]+)\n"))) << r.out;
  const std::string id = m[1];
  EXPECT_THAT(r.out, HasSubstr("progress: "));  // not a terminal: plain lines
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_THAT(r.out, HasSubstr("accept length (pooled over blocks)"));
  EXPECT_THAT(r.out, HasSubstr("accepted leading matches per block (n)"));
  CommandResult status = Cli({"status", id});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("job " + id + "  SUCCEEDED\n"));
  EXPECT_THAT(status.out, HasSubstr("  result       accept length "));

  // --json: stdout is the EvalResult alone, the same numbers as --sync.
  json job_result = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay"});
  json sync_result =
      CliJson({"eval", "--sync", "--drafter", "m", "--dataset", "d", "--mode", "replay"});
  ASSERT_TRUE(job_result.contains("positions")) << job_result.dump();
  EXPECT_EQ(job_result["blocks"], sync_result["blocks"]);
  EXPECT_EQ(job_result["acceptLengthPooled"], sync_result["acceptLengthPooled"]);
  EXPECT_EQ(job_result["positions"], sync_result["positions"]);
  EXPECT_EQ(job_result["acceptedHistogram"], sync_result["acceptedHistogram"]);
}

TEST_F(JobsCliTest, DetachThenStatusAndResults) {
  const std::string id = Detached({"--drafter", "m", "--dataset", "d", "--anchors", "all", "--run",
                                   "detach-run", "--step", "7", "--label", "lr=3e-4"});
  ASSERT_FALSE(id.empty());
  json result = WaitResult(id);
  EXPECT_GT(result["acceptLengthPooled"].get<double>(), 1.0);
  json job = CliJson({"status", id});
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(job["request"]["run"], "detach-run");
  EXPECT_EQ(job["request"]["step"], "7");
  EXPECT_EQ(job["request"]["labels"]["lr"], "3e-4");
  EXPECT_EQ(job["result"]["acceptLengthPooled"], result["acceptLengthPooled"]);
  CommandResult human = Cli({"results", id});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_THAT(human.out, HasSubstr("accept length (pooled over blocks)"));

  json detached = CliJson({"eval", "--detach", "--drafter", "m", "--dataset", "d"});
  EXPECT_FALSE(detached["id"].get<std::string>().empty());
  EXPECT_TRUE(detached.contains("state"));
  WaitResult(detached["id"]);

  CommandResult unknown = Cli({"status", "no-such-job"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND"));
}

TEST_F(JobsCliTest, ListFiltersByRunNewestFirst) {
  const std::string a =
      Detached({"--drafter", "m", "--dataset", "d", "--run", "list-run", "--step", "1"});
  WaitResult(a);
  const std::string b =
      Detached({"--drafter", "m", "--dataset", "d", "--run", "list-run", "--step", "2"});
  WaitResult(b);
  CommandResult r = Cli({"list", "--run", "list-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("STATE"));
  ASSERT_NE(r.out.find(a), std::string::npos) << r.out;
  ASSERT_NE(r.out.find(b), std::string::npos) << r.out;
  EXPECT_LT(r.out.find(b), r.out.find(a)) << r.out;  // newest first
  json list = CliJson({"list", "--run", "list-run", "--state", "succeeded"});
  ASSERT_EQ(list["jobs"].size(), 2u) << list.dump();
  EXPECT_EQ(list["jobs"][0]["id"], b);
  json page = CliJson({"list", "--run", "list-run", "--limit", "1"});
  ASSERT_EQ(page["jobs"].size(), 1u);
  ASSERT_FALSE(page["nextPageToken"].get<std::string>().empty());
  json next =
      CliJson({"list", "--run", "list-run", "--limit", "1", "--page-token", page["nextPageToken"]});
  ASSERT_EQ(next["jobs"].size(), 1u);
  EXPECT_EQ(next["jobs"][0]["id"], a);
  EXPECT_EQ(CliJson({"list", "--run", "no-such-run"})["jobs"].size(), 0u);
}

TEST_F(JobsCliTest, HistoryIsOrderedByStepAndDrawsOneSeries) {
  // Submitted out of order; the curve is by step.
  for (const char* step : {"300", "100", "200"}) {
    WaitResult(Detached({"--drafter", "m", "--dataset", "d", "--run", "hist-run", "--step", step}));
  }
  const std::string svg = dir_->Join("history.svg");
  CommandResult r = Cli({"history", "--run", "hist-run", "--svg", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("run hist-run: 3 evaluation(s)"));
  EXPECT_THAT(r.out, HasSubstr("ACC@1"));
  const size_t s100 = r.out.find("\n       100 "), s200 = r.out.find("\n       200 "),
               s300 = r.out.find("\n       300 ");
  ASSERT_NE(s100, std::string::npos) << r.out;
  EXPECT_LT(s100, s200);
  EXPECT_LT(s200, s300);
  EXPECT_THAT(r.out, HasSubstr("chart written to " + svg));
  const std::string text = ReadFileOrEmpty(svg);
  ExpectSvg(text, 1);
  EXPECT_THAT(text, HasSubstr(">hist-run</text>"));
  json j = CliJson({"history", "--run", "hist-run"});
  ASSERT_EQ(j["jobs"].size(), 3u);
  EXPECT_EQ(j["jobs"][0]["request"]["step"], "100");
  EXPECT_EQ(j["jobs"][2]["request"]["step"], "300");
}

TEST_F(JobsCliTest, CompareTwoJobsSideBySideWithAChart) {
  const std::string a = Detached({"--drafter", "m", "--dataset", "d", "--anchors", "all"});
  const std::string b =
      Detached({"--checkpoint", data_ + "/drafter-pt", "--dataset", "d", "--anchors", "all"});
  WaitResult(a);
  WaitResult(b);
  const std::string svg = dir_->Join("compare.svg");
  CommandResult r = Cli({"compare", a, b, "--svg", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("accept length"));
  EXPECT_THAT(r.out, HasSubstr("  pos 1 "));
  EXPECT_THAT(r.out, HasSubstr("(+0.000)"));  // same weights: no difference
  const std::string text = ReadFileOrEmpty(svg);
  ExpectSvg(text, 2);
  EXPECT_THAT(text, HasSubstr(a));
  EXPECT_THAT(text, HasSubstr(b));
  json j = CliJson({"compare", a, b});
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["id"], a);

  CommandResult one = Cli({"compare", a});
  EXPECT_EQ(one.exit_code, 64);
}

TEST_F(JobsCliTest, CancelAndResubmit) {
  // Several jobs back to back: the later ones wait in the queue.
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(Detached({"--drafter", "m", "--dataset", "d", "--anchors", "all"}));
  }
  CommandResult c = Cli({"--json", "cancel", ids.back()});
  if (c.exit_code == 0) {
    json cancelled = json::parse(c.out);
    EXPECT_EQ(cancelled["id"], ids.back());
    EXPECT_NE(cancelled["state"], "JOB_STATE_SUCCEEDED");
    CommandResult results = Cli({"results", ids.back(), "--wait", "--progress", "none"});
    if (Cli({"status", ids.back()}).out.find("CANCELLED") != std::string::npos) {
      EXPECT_EQ(results.exit_code, 1);
      EXPECT_THAT(results.err, HasSubstr("CANCELLED"));
      CommandResult no_results = Cli({"results", ids.back()});
      EXPECT_EQ(no_results.exit_code, 1);
      EXPECT_THAT(no_results.err, HasSubstr("FAILED_PRECONDITION: job " + ids.back() +
                                            " has no results: CANCELLED"));
    }
  } else {  // it had already finished: the server says so
    EXPECT_EQ(c.exit_code, 1) << c.err;
    EXPECT_THAT(c.err, HasSubstr("FAILED_PRECONDITION"));
  }
  for (const std::string& id : ids) Cli({"results", id, "--wait", "--progress", "none"});

  // Resubmit runs the same request again: a new job, the same numbers.
  json first = WaitResult(ids[0]);
  CommandResult re = Cli({"resubmit", ids[0]});
  ASSERT_EQ(re.exit_code, 0) << re.err;
  const std::string again = re.out.substr(0, re.out.size() - 1);
  EXPECT_NE(again, ids[0]);
  json second = WaitResult(again);
  EXPECT_EQ(second["acceptLengthPooled"], first["acceptLengthPooled"]);
  EXPECT_EQ(second["positions"], first["positions"]);
  json job = CliJson({"status", again});
  EXPECT_EQ(job["resubmittedFrom"], ids[0]);
  json re_json = CliJson({"resubmit", ids[0]});
  EXPECT_EQ(re_json["resubmittedFrom"], ids[0]);
  WaitResult(re_json["id"]);
}

TEST_F(JobsCliTest, OneShotCheckpointWithLabelsAndUnloadAfter) {
  json before = CliJson({"ls", "--kind", "drafter"});
  CommandResult r = Cli({"eval", "--checkpoint", data_ + "/drafter-pt", "--dataset", "d", "--run",
                         "oneshot", "--step", "4000", "--label", "note=first", "--unload-after"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("accept length (pooled over blocks)"));
  json after = CliJson({"ls", "--kind", "drafter"});
  EXPECT_EQ(after["resources"].size(), before["resources"].size());  // freed again
  json list = CliJson({"list", "--run", "oneshot"});
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["request"]["step"], "4000");
  EXPECT_EQ(list["jobs"][0]["request"]["labels"]["note"], "first");
  EXPECT_EQ(list["jobs"][0]["request"]["unloadAfter"], true);
}

TEST_F(JobsCliTest, AFailedJobIsReportedWithItsCode) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-4layers", "--name", "four"}).exit_code, 0);
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "four"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION: drafter needs layer 9"));
}

TEST_F(JobsCliTest, UsageErrorsNameTheProblem) {
  CommandResult label = Cli({"eval", "--drafter", "m", "--dataset", "d", "--label", "nokey"});
  EXPECT_EQ(label.exit_code, 64);
  EXPECT_THAT(label.err, HasSubstr("eval: --label 'nokey' is not KEY=VALUE"));
  // The key rule the server enforces too (dflash/eval/v1/label_key.h).
  CommandResult bad_key = Cli({"eval", "--drafter", "m", "--dataset", "d", "--label", "a b=1"});
  EXPECT_EQ(bad_key.exit_code, 64);
  EXPECT_THAT(bad_key.err, HasSubstr("eval: --label 'a b=1' is not KEY=VALUE with KEY of letters, "
                                     "digits, '_', '-', '.', '/' (at most 63)"));
  CommandResult twice =
      Cli({"eval", "--drafter", "m", "--dataset", "d", "--label", "a=1", "--label", "a=2"});
  EXPECT_EQ(twice.exit_code, 64);
  EXPECT_THAT(twice.err, HasSubstr("--label 'a' given twice"));
  CommandResult both = Cli({"eval", "--drafter", "m", "--dataset", "d", "--detach", "--sync"});
  EXPECT_EQ(both.exit_code, 64);
  EXPECT_THAT(both.err, HasSubstr("give --detach or --sync, not both"));
  CommandResult unload = Cli({"eval", "--drafter", "m", "--dataset", "d", "--unload-after"});
  EXPECT_EQ(unload.exit_code, 64);
  EXPECT_THAT(unload.err, HasSubstr("--unload-after applies to --checkpoint PATH only"));
  CommandResult state = Cli({"list", "--state", "done"});
  EXPECT_EQ(state.exit_code, 64);
  CommandResult history = Cli({"history"});
  EXPECT_EQ(history.exit_code, 64);
  EXPECT_THAT(history.err, HasSubstr("--run"));
}

}  // namespace
}  // namespace dflash
