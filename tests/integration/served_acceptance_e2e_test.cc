// Served acceptance end to end (docs/served-acceptance.md): every proposal
// policy against the Python reference for DFlash 1 and 2, engine presets,
// serving profiles out, and an engine's own counters back in (calibrate) on
// the real dflash-evald and dflash-eval.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

using ::dflash::testing::CommandResult;
using ::testing::HasSubstr;
using json = nlohmann::json;

class ServedAcceptanceE2eTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    SetUpTinyServer({});
    ASSERT_EQ(Cli({"load-target", data_ + "/target", "--name", "tn", "--final-norm"}).exit_code, 0);
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-final", "--name", "df"}).exit_code, 0);
    ASSERT_EQ(Cli({"load-drafter", data_ + "/drafter2", "--name", "m2"}).exit_code, 0);
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset2-final", "--name", "d2f"}).exit_code, 0);
  }

  // The reference in anchor mode over every anchor, as the service's calls below.
  static json Reference(const std::string& dataset, const std::string& drafter,
                        std::vector<std::string> args) {
    args.insert(args.begin(), {"--mode", "anchor", "--anchors", "all"});
    return testing::RunReferenceEval(data_, drafter, dataset, args);
  }

  // Every sampled setting of `got` against the reference's, in order.
  static void ExpectSameSampling(const json& got, const json& want) {
    ASSERT_EQ(got["sampling"].size(), want["sampling"].size()) << got.dump();
    for (size_t i = 0; i < got["sampling"].size(); ++i) {
      const json& g = got["sampling"][i];
      const json& w = want["sampling"][i];
      const std::string what = g["setting"].dump();
      EXPECT_NEAR(g["expectedAcceptLengthPooled"].get<double>(),
                  w["expected_accept_length_pooled"].get<double>(), 1e-4)
          << what;
      EXPECT_NEAR(g["expectedTau"].get<double>(), w["expected_tau"].get<double>(), 1e-4) << what;
      testing::ExpectNearEach(g["meanAlpha"], w["mean_alpha"], 1e-4, what + " mean alpha");
      testing::ExpectNearEach(g["marginalAccept"], w["marginal_accept"], 1e-4, what + " marginal");
    }
  }

  // A job run to the end: (id, result).
  static std::pair<std::string, json> RunJob(std::vector<std::string> args) {
    args.insert(args.begin(), "eval");
    args.push_back("--detach");
    json job = CliJson(args);
    const std::string id = job.value("id", "");
    EXPECT_FALSE(id.empty()) << job.dump();
    return {id, CliJson({"results", id, "--wait"})};
  }

  static std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_->Join(name);
    std::ofstream(path) << text;
    return path;
  }
};

const std::vector<std::string> kSettings = {"--sampling", "t=0", "--sampling", "t=0.7,p=0.9,k=5"};

TEST_F(ServedAcceptanceE2eTest, Dflash1PoliciesMatchTheReference) {
  std::vector<std::string> args = {"eval",     "--drafter", "m",         "--dataset", "df",
                                   "--target", "tn",        "--anchors", "all"};
  std::vector<std::string> pol = {"--policy", "sample", "--policy", "argmax", "--policy", "match"};
  args.insert(args.end(), kSettings.begin(), kSettings.end());
  args.insert(args.end(), pol.begin(), pol.end());
  json got = CliJson(args);
  std::vector<std::string> ref = kSettings;
  ref.insert(ref.end(), pol.begin(), pol.end());
  ExpectSameSampling(got, Reference("dataset-final", "drafter", ref));
  ASSERT_EQ(got["sampling"].size(), 6u);
  // Setting-major: t=0 under the three policies first; each is greedy there.
  for (int i = 0; i < 3; ++i) {
    const json& s = got["sampling"][i];
    EXPECT_EQ(s["expectedAcceptLengthPooled"].get<double>(),
              got["acceptLengthPooled"].get<double>())
        << s["setting"].dump();
    EXPECT_EQ(s["greedyEquivalent"], "greedy");
  }
  EXPECT_EQ(got["sampling"][1]["setting"]["policy"], "argmax");
  // On this fixture the three rules give three numbers at t=0.7.
  const double sample = got["sampling"][3]["expectedAcceptLengthPooled"].get<double>();
  const double argmax = got["sampling"][4]["expectedAcceptLengthPooled"].get<double>();
  const double match = got["sampling"][5]["expectedAcceptLengthPooled"].get<double>();
  EXPECT_GE(sample, match);  // sum min(p, q) >= sum p q at every position
  EXPECT_NE(sample, argmax);
}

TEST_F(ServedAcceptanceE2eTest, EnginePresetTruncatesTheTargetOnly) {
  json got = CliJson({"eval", "--drafter", "m", "--dataset", "df", "--target", "tn", "--anchors",
                      "all", "--sampling", "t=0.7,p=0.9,k=-1", "--engine", "vllm", "--policy",
                      "argmax", "--policy", "sample"});
  ASSERT_EQ(got["sampling"].size(), 2u) << got.dump();
  EXPECT_EQ(got["sampling"][0]["setting"]["engine"], "vllm");
  EXPECT_TRUE(got["sampling"][0]["setting"]["targetOnlyTruncation"].get<bool>());
  json want = Reference("dataset-final", "drafter",
                        {"--sampling", "t=0.7,p=0.9,k=0", "--policy", "argmax", "--policy",
                         "sample", "--target-only-truncation"});
  ExpectSameSampling(got, want);
  CommandResult z = Cli({"eval", "--drafter", "m", "--dataset", "df", "--target", "tn",
                         "--sampling", "t=0.7,p=0.9", "--engine", "zlab"});
  EXPECT_EQ(z.exit_code, 1);
  EXPECT_THAT(z.err, HasSubstr("INVALID_ARGUMENT: sampling 't=0.7,p=0.9"));
  EXPECT_THAT(z.err, HasSubstr("engine zlab applies no top-p or top-k"));
}

TEST_F(ServedAcceptanceE2eTest, Dflash2PoliciesMatchTheReference) {
  std::vector<std::string> pol = {"--policy", "sample", "--policy", "argmax",
                                  "--policy", "match",  "--policy", "selector"};
  std::vector<std::string> args = {"eval",     "--drafter", "m2",        "--dataset", "d2f",
                                   "--target", "tn",        "--anchors", "all"};
  args.insert(args.end(), kSettings.begin(), kSettings.end());
  args.insert(args.end(), pol.begin(), pol.end());
  json got = CliJson(args);
  std::vector<std::string> ref = kSettings;
  ref.insert(ref.end(), pol.begin(), pol.end());
  ExpectSameSampling(got, Reference("dataset2-final", "drafter2", ref));
  ASSERT_EQ(got["sampling"].size(), 8u);
  // At t=0 the selector's choice is the greedy draft; the unary head's
  // argmax ("sample") is another proposer.
  EXPECT_EQ(got["sampling"][1]["expectedAcceptLengthPooled"].get<double>(),
            got["acceptLengthPooled"].get<double>());
  EXPECT_EQ(got["sampling"][3]["expectedAcceptLengthPooled"].get<double>(),
            got["acceptLengthPooled"].get<double>());
  EXPECT_EQ(got["sampling"][0]["greedyEquivalent"], "unary");
}

TEST_F(ServedAcceptanceE2eTest, SelectorOnDflash1IsRefused) {
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "df", "--target", "tn",
                         "--sampling", "t=0.7", "--policy", "selector"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("INVALID_ARGUMENT: policy selector needs a DFlash 2 drafter (its "
                               "candidate selector proposes); this drafter is DFlash 1: use "
                               "sample, argmax or match"));
}

// vLLM's counters as its /metrics shows them, for `drafts` verify steps with
// per-position accepted counts `per_pos`.
std::string VllmScrape(int64_t drafts, const std::vector<int64_t>& per_pos) {
  const std::string l = "{engine=\"0\",model_name=\"target\"}";
  int64_t accepted = 0;
  for (int64_t n : per_pos) accepted += n;
  std::string s = "# TYPE vllm:spec_decode_num_drafts counter\n";
  s += "vllm:spec_decode_num_drafts_total" + l + " " + std::to_string(drafts) + ".0\n";
  s += "vllm:spec_decode_num_draft_tokens_total" + l + " " +
       std::to_string(drafts * static_cast<int64_t>(per_pos.size())) + ".0\n";
  s += "vllm:spec_decode_num_accepted_tokens_total" + l + " " + std::to_string(accepted) + ".0\n";
  for (size_t p = 0; p < per_pos.size(); ++p) {
    s += "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"target\","
         "position=\"" +
         std::to_string(p) + "\"} " + std::to_string(per_pos[p]) + ".0\n";
  }
  return s;
}

TEST_F(ServedAcceptanceE2eTest, CalibrateAgainstVllmAndSglangCounters) {
  auto [id, result] =
      RunJob({"--drafter", "m", "--dataset", "df", "--target", "tn", "--mode", "replay"});
  ASSERT_FALSE(result.empty());
  const int64_t blocks = std::stoll(result["blocks"].get<std::string>());
  std::vector<int64_t> per_pos, halved;
  for (const json& p : result["positions"]) {
    per_pos.push_back(std::stoll(p.value("accepted", "0")));
    halved.push_back(per_pos.back() / 2);
  }
  // A served run that accepted what the job predicts, counters from 1000.
  std::vector<int64_t> base(per_pos.size(), 500), after(per_pos.size());
  for (size_t i = 0; i < per_pos.size(); ++i) after[i] = base[i] + per_pos[i];
  const std::string before_path = Write("before.prom", VllmScrape(1000, base));
  const std::string after_path = Write("after.prom", VllmScrape(1000 + blocks, after));
  CommandResult r = Cli({"calibrate", id, "--served", before_path, "--served", after_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("step-weighted accept length"));
  EXPECT_THAT(r.out, HasSubstr("ratio 1.000"));
  EXPECT_THAT(r.out, HasSubstr("verdict: within"));

  for (size_t i = 0; i < per_pos.size(); ++i) after[i] = base[i] + halved[i];
  Write("after-half.prom", VllmScrape(1000 + blocks, after));
  json off = CliJson(
      {"calibrate", id, "--served", before_path, "--served", dir_->Join("after-half.prom")});
  EXPECT_EQ(off["verdict"], "off") << off.dump();
  EXPECT_LT(off["ratio"].get<double>(), 0.98);
  EXPECT_FALSE(off["likelyCauses"].empty());
  ASSERT_EQ(off["positions"].size(), per_pos.size());

  // Swapped files, another K: refused, and nothing stored.
  CommandResult swapped = Cli({"calibrate", id, "--served", after_path, "--served", before_path});
  EXPECT_EQ(swapped.exit_code, 1);
  EXPECT_THAT(swapped.err, HasSubstr("INVALID_ARGUMENT: " + after_path + " -> " + before_path +
                                     ": vllm:spec_decode_num_drafts went from"));
  Write("k2.prom", VllmScrape(blocks, {1, 1}));
  CommandResult k = Cli({"calibrate", id, "--served", dir_->Join("k2.prom")});
  EXPECT_EQ(k.exit_code, 1);
  EXPECT_THAT(k.err, HasSubstr("vllm verified 2 draft tokens per step but job " + id));

  // SGLang: one request line whose counters are the job's totals.
  int64_t accepted = 0;
  for (int64_t n : per_pos) accepted += n;
  json line = {{"meta_info",
                {{"completion_tokens", 1 + blocks + accepted},
                 {"spec_verify_ct", blocks},
                 {"spec_accept_token_num", accepted},
                 {"spec_draft_token_num", blocks * static_cast<int64_t>(per_pos.size())}}}};
  CommandResult s = Cli({"calibrate", id, "--served", Write("sglang.jsonl", line.dump() + "\n")});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_THAT(s.out, HasSubstr("calibration sglang vs job " + id));
  EXPECT_THAT(s.out, HasSubstr("ratio 1.000"));

  // Stored with the job, in order.
  json job = CliJson({"status", id});
  ASSERT_EQ(job["calibrations"].size(), 3u) << job.dump();
  EXPECT_EQ(job["calibrations"][0]["verdict"], "within");
  EXPECT_EQ(job["calibrations"][1]["verdict"], "off");
  EXPECT_EQ(job["calibrations"][2]["source"], "sglang");
  CommandResult shown = Cli({"results", id});
  EXPECT_THAT(shown.out, HasSubstr("calibrations (served counters against this job)"));
}

TEST_F(ServedAcceptanceE2eTest, ExportedProfilesKeepTheInvariants) {
  auto [id, result] = RunJob({"--drafter", "m", "--dataset", "df", "--target", "tn", "--anchors",
                              "all", "--sampling", "t=0.7", "--engine", "vllm"});
  ASSERT_FALSE(result.empty());
  for (int setting : {0, 1}) {
    CommandResult r =
        Cli({"export-profile", id, "--format", "modelopt", "--setting", std::to_string(setting)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json p = json::parse(r.out);
    EXPECT_EQ(p["schema_version"], "1.0");
    const json& m = p["marginal_accept_rates"];
    ASSERT_EQ(m.size(), p["num_speculative_tokens"].get<size_t>());
    double implied = 1, previous = 1;
    for (const json& x : m) {
      EXPECT_LE(x.get<double>(), previous + 1e-12);
      previous = x.get<double>();
      implied += previous;
    }
    EXPECT_NEAR(implied, p["mean_accept_length"].get<double>(), 1e-5);
    EXPECT_TRUE(p["validation"]["mean_consistency"]["passed"].get<bool>());
    const double want = setting == 0
                            ? result["acceptLengthPooled"].get<double>()
                            : result["sampling"][0]["expectedAcceptLengthPooled"].get<double>();
    if (setting == 1) EXPECT_NEAR(p["mean_accept_length"].get<double>(), want, 1e-6);
    if (setting == 1) EXPECT_EQ(p["measurement_conditions"]["proposal_policy"], "argmax");
  }
  CommandResult v = Cli({"export-profile", id, "--format", "vllm", "--setting", "1", "--out",
                         dir_->Join("spec.json")});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  std::ifstream in(dir_->Join("spec.json"));
  json spec = json::parse(in);
  EXPECT_EQ(spec["rejection_sample_method"], "synthetic");
  CommandResult bad = Cli({"export-profile", id, "--format", "eagle"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("INVALID_ARGUMENT: unknown profile format 'eagle' (known: "
                                 "modelopt, vllm, sglang)"));
  CommandResult range = Cli({"export-profile", id, "--format", "vllm", "--setting", "5"});
  EXPECT_EQ(range.exit_code, 1);
  EXPECT_THAT(range.err, HasSubstr("INVALID_ARGUMENT: setting 5: job " + id +
                                   " has 0 (greedy), 1 (t=0.7 policy=argmax engine=vllm)"));
}

}  // namespace
}  // namespace dflash
