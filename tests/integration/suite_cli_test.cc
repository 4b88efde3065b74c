// Suites through the real binaries: `eval --dataset d,d2` and a suite the
// server's config file declares run one job with a result per dataset and
// their macro average (printed as a table), `list --suite` finds them,
// `history` draws one curve per dataset, and bad suites are refused by name.
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

class SuiteCliTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    config_dir_ = new testing::TempDir();
    const std::string config = config_dir_->Join("server.yaml");
    std::ofstream(config) << "suites:\n  pair: [d, d2]\n";
    SetUpTinyServer({"--config", config});
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-split", "--name", "d2"}).exit_code, 0);
  }
  static void TearDownTestSuite() {
    TinyServerTest::TearDownTestSuite();
    delete config_dir_;
  }
  static testing::TempDir* config_dir_;
};
testing::TempDir* SuiteCliTest::config_dir_ = nullptr;

double Mean(const json& suite, const char* key) {
  double sum = 0;
  for (const json& d : suite["suiteResults"]) sum += d["result"][key].get<double>();
  return sum / static_cast<double>(suite["suiteResults"].size());
}

TEST_F(SuiteCliTest, ACommaListIsOneJobWithAResultPerDatasetAndTheMacroAverage) {
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "d,d2", "--run", "suite-run",
                         "--step", "1", "--progress", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("suite d,d2: 2 datasets, anchor mode"));
  EXPECT_THAT(r.out, HasSubstr("\n  d        "));
  EXPECT_THAT(r.out, HasSubstr("\n  d2       "));
  EXPECT_THAT(r.out, HasSubstr("\n  macro average "));
  json j = CliJson({"eval", "--drafter", "m", "--dataset", "d,d2", "--run", "suite-run", "--step",
                    "2", "--progress", "none"});
  ASSERT_EQ(j["suiteResults"].size(), 2u) << j.dump();
  EXPECT_EQ(j["suite"], "d,d2");
  EXPECT_EQ(j["suiteResults"][0]["dataset"], "d");
  EXPECT_EQ(j["suiteResults"][1]["dataset"], "d2");
  EXPECT_DOUBLE_EQ(j["acceptLengthPooled"].get<double>(), Mean(j, "acceptLengthPooled"));
  EXPECT_DOUBLE_EQ(j["tau"].get<double>(), Mean(j, "tau"));
  // Each part is that dataset's own evaluation, intervals included.
  json alone = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--progress", "none"});
  EXPECT_EQ(j["suiteResults"][0]["result"]["acceptLengthPooled"], alone["acceptLengthPooled"]);
  EXPECT_EQ(j["suiteResults"][0]["result"]["positions"], alone["positions"]);
  EXPECT_TRUE(j["suiteResults"][1]["result"].contains("tauCi"));

  json listed = CliJson({"list", "--suite", "d,d2"});
  ASSERT_EQ(listed["jobs"].size(), 2u) << listed.dump();
  EXPECT_EQ(listed["jobs"][0]["request"]["suiteDatasets"], json({"d", "d2"}));
  EXPECT_EQ(CliJson({"list", "--suite", "no-such-suite"})["jobs"].size(), 0u);

  const std::string svg = dir_->Join("suite-history.svg");
  CommandResult h = Cli({"history", "--run", "suite-run", "--svg", svg});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_THAT(h.out, HasSubstr(" d            "));
  EXPECT_THAT(h.out, HasSubstr(" d2           "));
  EXPECT_THAT(h.out, HasSubstr(" macro avg    "));
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t lines = 0;
  for (size_t p = text.find("<polyline "); p != std::string::npos;
       p = text.find("<polyline ", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u) << text;  // one curve per dataset
  EXPECT_THAT(text, HasSubstr(">d2</text>"));
}

TEST_F(SuiteCliTest, ASuiteFromTheConfigFile) {
  json j = CliJson({"eval", "--drafter", "m", "--dataset", "pair", "--run", "cfg-run", "--step",
                    "5", "--progress", "none"});
  ASSERT_EQ(j["suiteResults"].size(), 2u) << j.dump();
  EXPECT_EQ(j["suite"], "pair");
  json listed = CliJson({"list", "--suite", "pair"});
  ASSERT_EQ(listed["jobs"].size(), 1u);
  EXPECT_EQ(listed["jobs"][0]["request"]["dataset"], "pair");
  EXPECT_EQ(listed["jobs"][0]["request"]["suiteDatasets"], json({"d", "d2"}));
}

TEST_F(SuiteCliTest, BadSuitesAreRefusedByName) {
  CommandResult twice = Cli({"eval", "--drafter", "m", "--dataset", "d,d"});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_THAT(twice.err, HasSubstr("INVALID_ARGUMENT: suite 'd,d' names dataset 'd' twice"));
  CommandResult missing = Cli({"eval", "--drafter", "m", "--dataset", "d,nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err,
              HasSubstr("NOT_FOUND: suite 'd,nope': no resident dataset named 'nope'"));
  CommandResult gated = Cli({"eval", "--drafter", "m", "--dataset", "d,d2", "--run", "g", "--step",
                             "3", "--gate", "previous"});
  EXPECT_EQ(gated.exit_code, 1);
  EXPECT_THAT(gated.err, HasSubstr("gate applies to one dataset"));
}

}  // namespace
}  // namespace dflash
