// Intervals, paired comparison and the regression gate through the real
// binaries on the tiny fixture: `eval` prints 95% intervals, `compare`
// prints paired differences with a verdict per metric (and refuses pairing
// clearly), and `eval --gate` exits 4 only when the new checkpoint is
// significantly worse than its reference, with the verdict in the record.
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"

namespace dflash {
namespace {

using ::dflash::testing::CommandResult;
using ::testing::HasSubstr;
using json = nlohmann::json;

class GateCliTest : public testing::TinyServerTest {
 protected:
  // `eval --checkpoint DIR` in run `run` at `step`, with `extra` flags.
  static CommandResult Eval(const std::string& drafter_dir, const std::string& run, int step,
                            std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "eval", "--checkpoint", data_ + "/" + drafter_dir, "--dataset",  "d",   "--run",
        run,    "--step",       std::to_string(step),      "--progress", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Cli(args);
  }
  static std::string JobId(const CommandResult& r) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.out, m, std::regex("^job ([^ \n]+)\n"))) << r.out << r.err;
    return m.size() > 1 ? std::string(m[1]) : "";
  }
};

TEST_F(GateCliTest, EvalPrintsIntervalsAndCarriesThemInJson) {
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "d", "--progress", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("95% intervals (percentile bootstrap over samples, 1000 resamples)"));
  json j = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--progress", "none"});
  ASSERT_TRUE(j.contains("acceptLengthCi")) << j.dump();
  const double lo = j["acceptLengthCi"]["lo"], hi = j["acceptLengthCi"]["hi"];
  const double value = j["acceptLengthPooled"];
  EXPECT_LE(lo, value);
  EXPECT_GE(hi, value);
  EXPECT_LT(lo, hi);
  EXPECT_TRUE(j["positions"][0].contains("acceptanceCi"));
  EXPECT_EQ(j["ciResamples"], 1000);
  json none = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--ci", "none"});
  EXPECT_FALSE(none.contains("acceptLengthCi")) << none.dump();
  EXPECT_EQ(none.value("ciResamples", -1), 0);  // --json prints zero fields too
}

TEST_F(GateCliTest, GateExitsFourOnlyWhenSignificantlyWorse) {
  // The first step has no reference: pass, exit 0.
  CommandResult first = Eval("drafter", "gate-run", 100, {"--gate", "previous"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("gate: pass (no reference: no SUCCEEDED job of run 'gate-run' "
                                   "below step 100 on this dataset)"));
  const std::string good = JobId(first);
  // Other weights (drafter-v1new: its own seed) are far worse on this data.
  CommandResult worse = Eval("drafter-v1new", "gate-run", 200, {"--gate", "previous"});
  EXPECT_EQ(worse.exit_code, 4) << worse.out << worse.err;
  EXPECT_THAT(worse.out, HasSubstr("gate: WORSE than " + good + " (step 100) on tau: "));
  const std::string bad = JobId(worse);
  // The verdict is in the job's record.
  json job = CliJson({"status", bad});
  EXPECT_EQ(job["result"]["gate"]["verdict"], "worse") << job.dump();
  EXPECT_EQ(job["result"]["gate"]["referenceJob"], good);
  EXPECT_EQ(job["request"]["gate"], "previous");
  EXPECT_LT(job["result"]["gate"]["deltaCi"]["hi"].get<double>(), 0.0);
  // A tolerance wider than the loss passes.
  CommandResult tolerant = Eval("drafter-v1new", "gate-run", 250,
                                {"--gate", good, "--metric", "acceptance[1]", "--min-delta", "2"});
  EXPECT_EQ(tolerant.exit_code, 0) << tolerant.out << tolerant.err;
  EXPECT_THAT(tolerant.out,
              HasSubstr("gate: pass against " + good + " (step 100) on acceptance[1]"));
  // best: the step-100 weights again equal the best (delta 0): pass.
  CommandResult same = Eval("drafter", "gate-run", 300, {"--gate", "best"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_THAT(same.out, HasSubstr("gate: pass against " + good));
  // --json: stdout is the result (with its gate); the verdict line goes to stderr.
  CommandResult js =
      Eval("drafter-v1new", "gate-run", 400, {"--gate", "best", "--metric", "accept_length"});
  EXPECT_EQ(js.exit_code, 4) << js.err;
  CommandResult js2 = Cli({"--json", "eval", "--checkpoint", data_ + "/drafter-v1new", "--dataset",
                           "d", "--run", "gate-run", "--step", "500", "--gate", "best"});
  EXPECT_EQ(js2.exit_code, 4) << js2.err;
  EXPECT_EQ(json::parse(js2.out)["gate"]["verdict"], "worse");
  EXPECT_THAT(js2.err, HasSubstr("gate: WORSE than " + good));
}

TEST_F(GateCliTest, GateFloorFailsOnTheWorstSlice) {
  CommandResult first = Eval("drafter", "floor-run", 100, {"--gate", "previous"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string good = JobId(first);
  // A tolerance wider than any loss passes the overall metric; the slice
  // floor still catches the fall, naming the slice.
  CommandResult floor = Eval("drafter-v1new", "floor-run", 200,
                             {"--gate", "previous", "--metric", "accept_length", "--min-delta",
                              "100", "--gate-floor", "0.01"});
  EXPECT_EQ(floor.exit_code, 4) << floor.out << floor.err;
  EXPECT_THAT(floor.out, HasSubstr("gate: pass against " + good));
  EXPECT_THAT(floor.out, HasSubstr("; worst slice context=0-512: accept length "));
  EXPECT_THAT(floor.out, HasSubstr(", FELL BY MORE THAN the floor 0.01"));
  json job = CliJson({"status", JobId(floor)});
  EXPECT_EQ(job["result"]["gate"]["verdict"], "worse") << job.dump();
  EXPECT_EQ(job["result"]["gate"]["worstSlice"], "context=0-512");
  EXPECT_LT(job["result"]["gate"]["worstSliceDelta"].get<double>(), -0.01);
  EXPECT_EQ(job["request"]["gateFloor"].get<double>(), 0.01);
  // A floor wider than the fall passes.
  CommandResult wide = Eval(
      "drafter-v1new", "floor-run", 300,
      {"--gate", good, "--metric", "accept_length", "--min-delta", "100", "--gate-floor", "100"});
  EXPECT_EQ(wide.exit_code, 0) << wide.out << wide.err;
  EXPECT_THAT(wide.out, HasSubstr(", within the floor 100"));
  CommandResult negative =
      Eval("drafter", "floor-run", 400, {"--gate", "previous", "--gate-floor", "-1"});
  EXPECT_EQ(negative.exit_code, 64);
}

TEST_F(GateCliTest, GateRefusalsNameTheProblem) {
  CommandResult unknown = Eval("drafter", "gate-bad", 1, {"--gate", "ev-no-such-job"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND: gate reference"));
  CommandResult metric = Eval("drafter", "gate-bad", 1, {"--gate", "previous", "--metric", "tua"});
  EXPECT_EQ(metric.exit_code, 1);
  EXPECT_THAT(metric.err, HasSubstr("INVALID_ARGUMENT: metric 'tua' is not accept_length, tau"));
  // The gate's request rules are the server's (core/request_check.h): its
  // words, exit 1, as SubmitEval answers any client.
  CommandResult no_run = Cli({"eval", "--drafter", "m", "--dataset", "d", "--gate", "best"});
  EXPECT_EQ(no_run.exit_code, 1);
  EXPECT_THAT(no_run.err, HasSubstr("INVALID_ARGUMENT: gate 'best' looks for the reference among "
                                    "the run's jobs; give run"));
  CommandResult stray = Cli({"eval", "--drafter", "m", "--dataset", "d", "--min-delta", "1"});
  EXPECT_EQ(stray.exit_code, 1);
  EXPECT_THAT(stray.err, HasSubstr("INVALID_ARGUMENT: gate_metric, gate_min_delta, "
                                   "gate_allow_recipe_mismatch and gate_floor need gate"));
}

TEST_F(GateCliTest, CompareReportsPairedDifferences) {
  json a = CliJson({"eval", "--detach", "--drafter", "m", "--dataset", "d"});
  json b =
      CliJson({"eval", "--detach", "--checkpoint", data_ + "/drafter-v1new", "--dataset", "d"});
  const std::string ida = a["id"], idb = b["id"];
  CliJson({"results", ida, "--wait", "--progress", "none"});
  CliJson({"results", idb, "--wait", "--progress", "none"});
  CommandResult r = Cli({"compare", ida, idb});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("paired differences against " + ida));
  EXPECT_THAT(r.out, ::testing::MatchesRegex("(.|\n)*  tau +" + idb +
                                             " +-[0-9.]+ \\[-[0-9.]+, "
                                             "-[0-9.]+\\] +worse\n(.|\n)*"));
  json j = CliJson({"compare", ida, idb});
  ASSERT_FALSE(j["differences"].empty()) << j.dump();
  EXPECT_EQ(j["differences"][0]["metric"], "accept_length");
  EXPECT_EQ(j["differences"][0]["jobIndex"], 1);
  EXPECT_EQ(j["differences"][0]["verdict"], "worse");
  EXPECT_EQ(j["differences"][0]["excludesZero"], true);
  // Another sample limit is another recipe: refused, naming the field.
  json c = CliJson({"eval", "--detach", "--drafter", "m", "--dataset", "d", "--max-samples", "1"});
  const std::string idc = c["id"];
  CliJson({"results", idc, "--wait", "--progress", "none"});
  CommandResult other = Cli({"compare", ida, idc});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err,
            "dflash-eval: FAILED_PRECONDITION: compare: the jobs' recipes differ, so "
            "their numbers are not comparable: " +
                idc + " against " + ida +
                " (samples: all vs at most 1); pass --allow-recipe-mismatch to "
                "compare them anyway\n");
  // Allowed: each difference is a warning; unpaired samples are refused when
  // pairing is required, a warning otherwise.
  CommandResult strict = Cli({"compare", ida, idc, "--allow-recipe-mismatch", "--require-paired"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_THAT(strict.err, HasSubstr("FAILED_PRECONDITION: cannot pair " + ida + " and " + idc +
                                    ": they scored different samples"));
  CommandResult loose = Cli({"compare", ida, idc, "--allow-recipe-mismatch"});
  EXPECT_EQ(loose.exit_code, 0) << loose.err;
  EXPECT_THAT(loose.out, HasSubstr("warning: recipe of " + idc + " differs from " + ida +
                                   ": samples: all vs at most 1"));
  EXPECT_THAT(loose.out, HasSubstr("warning: no paired intervals: cannot pair"));
}

// A gate against a job of another recipe cannot decide (exit 1, the fields
// named) unless the mismatch is allowed; best/previous skip other recipes.
TEST_F(GateCliTest, AGateAcrossRecipesIsAnErrorUnlessAllowed) {
  CommandResult step1 = Eval("drafter", "recipe-run", 1, {});
  ASSERT_EQ(step1.exit_code, 0) << step1.err;
  const std::string first = JobId(step1);
  auto gated = [&](int step, const std::string& gate, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--max-blocks", "2", "--gate", gate});
    return Eval("drafter", "recipe-run", step, extra);
  };
  CommandResult strict = gated(2, first, {});
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  EXPECT_THAT(strict.out,
              HasSubstr("gate: cannot decide: FAILED_PRECONDITION: gate: the jobs' recipes differ, "
                        "so their numbers are not comparable: " +
                        JobId(strict) + " against " + first +
                        " (anchors: even vs even, max_blocks 2); pass --allow-recipe-mismatch to "
                        "gate them anyway\n"));
  // previous: step 2 shares this recipe (step 1 does not).
  CommandResult previous = gated(3, "previous", {});
  EXPECT_EQ(previous.exit_code, 0) << previous.out << previous.err;
  EXPECT_THAT(previous.out, HasSubstr("against " + JobId(strict) + " (step 2)"));
  // Only another recipe below: an error naming the latest of it.
  CommandResult none =
      Eval("drafter", "recipe-run", 4, {"--gate", "previous", "--max-blocks", "1"});
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_THAT(none.out, HasSubstr("gate: cannot decide: FAILED_PRECONDITION: gate: no earlier job "
                                  "of run 'recipe-run' has this job's recipe (r64:"));
  EXPECT_THAT(none.out, HasSubstr("the latest, " + JobId(previous) +
                                  " (step 3) differs in anchors: even, max_blocks 1 vs even, "
                                  "max_blocks 2; pass --allow-recipe-mismatch"));
  CommandResult allowed = gated(5, first, {"--allow-recipe-mismatch"});
  // Allowed: a verdict (pass or worse: fewer blocks may well score lower).
  EXPECT_NE(allowed.exit_code, 1) << allowed.out << allowed.err;
  EXPECT_THAT(allowed.out, HasSubstr(first + " (step 1) on tau: "));
  // The recipe is in the job's status.
  CommandResult status = Cli({"status", first});
  EXPECT_THAT(status.out, ::testing::ContainsRegex("recipe +r64:[0-9a-f]{16}: dataset h64:"));
}

}  // namespace
}  // namespace dflash
