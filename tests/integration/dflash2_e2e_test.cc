// DFlash 2 drafters and z-lab's current DFlash 1 rules, end to end: the real
// server and client on the tiny fixture's drafter-v1new (input scale,
// multiplier, softcap, a window shorter than the block, top-level draft
// keys) and drafter2 (convs and the candidate selector), checked count for
// count against tools/dflash_ref under both named semantics.
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::CommandResult;
using ::dflash::testing::ExpectSameMetrics;
using ::testing::HasSubstr;
using json = nlohmann::json;

class DFlash2E2eTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    SetUpTinyServer({});
    for (const auto& [kind, dir, name] :
         {std::tuple<const char*, const char*, const char*>{"load-drafter", "drafter-v1new", "v1"},
          {"load-dataset", "dataset-v1new", "d1"},
          {"load-drafter", "drafter2", "m2"},
          {"load-dataset", "dataset2", "d2"}}) {
      CommandResult r = Cli({kind, data_ + "/" + dir, "--name", name});
      ASSERT_EQ(r.exit_code, 0) << kind << " " << dir << ": " << r.out << r.err;
    }
  }
  static json Expected(const std::string& name) {
    std::ifstream in(data_ + "/expected/" + name);
    EXPECT_TRUE(in.good()) << "no expected/" << name;
    return in.good() ? json::parse(in) : json::object();
  }
  static json Eval(const std::string& drafter, const std::string& dataset, const std::string& mode,
                   const std::string& semantics = "") {
    std::vector<std::string> args = {"eval",   "--drafter", drafter,     "--dataset", dataset,
                                     "--mode", mode,        "--anchors", "all"};
    if (!semantics.empty()) args.insert(args.end(), {"--semantics", semantics});
    return CliJson(args);
  }
};

TEST_F(DFlash2E2eTest, CurrentRulesAreTheDefaultAndMatchTheReference) {
  json anchor = Eval("m", "d", "anchor");
  ExpectSameMetrics(anchor, Expected("current/anchor_all.json"));
  EXPECT_EQ(anchor["semantics"], "zlab-current");
  EXPECT_THAT(anchor["semanticsReference"].get<std::string>(), HasSubstr("10129599"));
  EXPECT_EQ(anchor["family"], "DFlash 1");
  json replay = Eval("m", "d", "replay");
  ExpectSameMetrics(replay, Expected("current/replay.json"));
  // z-lab's current loop: each sample's recorded values add up to L - P - 1.
  for (const json& s : replay["perSample"]) {
    if (!s.contains("blocks")) continue;
    const double total = s["meanAcceptLength"].get<double>() * s["blocks"].get<int>();
    EXPECT_NEAR(total, s["length"].get<int>() - s["firstResponsePosition"].get<int>() - 1, 1e-6)
        << s.dump();
  }
}

TEST_F(DFlash2E2eTest, UpdatedDFlash1MatchesTheReferenceUnderBothSemantics) {
  ExpectSameMetrics(Eval("v1", "d1", "anchor"), Expected("v1new/anchor_all.json"));
  ExpectSameMetrics(Eval("v1", "d1", "replay"), Expected("v1new/replay.json"));
  json old_anchor = Eval("v1", "d1", "anchor", "zlab-2025");
  ExpectSameMetrics(old_anchor, Expected("v1new/2025/anchor_all.json"));
  EXPECT_EQ(old_anchor["semantics"], "zlab-2025");
  ExpectSameMetrics(Eval("v1", "d1", "replay", "zlab-2025"), Expected("v1new/2025/replay.json"));
}

TEST_F(DFlash2E2eTest, DFlash2MatchesTheReferenceCountForCount) {
  json anchor = Eval("m2", "d2", "anchor");
  ExpectSameMetrics(anchor, Expected("dflash2/anchor_all.json"));
  EXPECT_EQ(anchor["family"], "DFlash 2");
  EXPECT_GT(anchor["selectorTopK"].get<int>(), 0);
  ExpectSameMetrics(Eval("m2", "d2", "replay"), Expected("dflash2/replay.json"));
}

// Replay scores each block to its first miss by default (the blocks have 7
// draft slots: two slices); --full-positions measures every position again,
// count for count with the reference. Anchor mode with --metrics acceptance
// stops at the first miss too, with the same acceptance numbers.
TEST_F(DFlash2E2eTest, FirstMissScoringAndFullPositionsMatchTheReference) {
  for (const auto& [drafter, dataset, dir] :
       {std::tuple<const char*, const char*, const char*>{"m2", "d2", "dflash2"},
        {"v1", "d1", "v1new"}}) {
    SCOPED_TRACE(drafter);
    json cut = Eval(drafter, dataset, "replay");
    EXPECT_TRUE(cut.value("positionsToFirstMiss", false));
    ExpectSameMetrics(cut, Expected(std::string(dir) + "/replay.json"));
    json full = CliJson({"eval", "--drafter", drafter, "--dataset", dataset, "--mode", "replay",
                         "--full-positions"});
    EXPECT_FALSE(full.value("positionsToFirstMiss", false));
    ExpectSameMetrics(full, Expected(std::string(dir) + "/replay.json"));
    json acc = CliJson({"eval", "--drafter", drafter, "--dataset", dataset, "--mode", "anchor",
                        "--anchors", "all", "--metrics", "acceptance"});
    EXPECT_TRUE(acc.value("positionsToFirstMiss", false));
    ExpectSameMetrics(acc, Expected(std::string(dir) + "/anchor_all.json"));
  }
  CommandResult r = Cli({"eval", "--drafter", "m2", "--dataset", "d2", "--mode", "replay"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("note: blocks scored to their first miss"));
  EXPECT_THAT(r.out, HasSubstr("warning: each block was scored up to its first miss"));
}

TEST_F(DFlash2E2eTest, CodebooksSavedWithDotWeightGiveTheSameNumbers) {
  ASSERT_EQ(Cli({"load-drafter", data_ + "/drafter2-dotweight", "--name", "m2w"}).exit_code, 0);
  ExpectSameMetrics(Eval("m2w", "d2", "anchor"), Expected("dflash2/anchor_all.json"));
  EXPECT_EQ(Cli({"unload", "drafter", "m2w"}).exit_code, 0);
}

TEST_F(DFlash2E2eTest, HumanOutputAnswersDidTheSelectorHelp) {
  CommandResult r = Cli({"eval", "--drafter", "m2", "--dataset", "d2", "--mode", "anchor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("DFlash 2 drafter, semantics zlab-current"));
  EXPECT_THAT(r.out, HasSubstr("with it,"));
  EXPECT_THAT(r.out, HasSubstr("without (unary argmax)"));
  EXPECT_THAT(r.out, HasSubstr("coverage misses"));
}

TEST_F(DFlash2E2eTest, ValidatePrintsTheFamilyAndEveryDraftKey) {
  CommandResult r = Cli({"validate", data_ + "/drafter2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("family DFlash 2 (DFlash2DraftModel)"));
  EXPECT_THAT(r.out, HasSubstr("draft key conv_kernel_size = 2 (dflash_config)"));
  EXPECT_THAT(r.out, HasSubstr("draft key input_embedding_scale = "));
  CommandResult v1 = Cli({"validate", data_ + "/drafter-v1new"});
  ASSERT_EQ(v1.exit_code, 0) << v1.out << v1.err;
  EXPECT_THAT(v1.out, HasSubstr("draft key block_size = 8 (top level)"));
  EXPECT_THAT(v1.out, HasSubstr("draft key output_multiplier = "));
}

// A checkpoint folder named `dir` with one drafter's config.json and
// another's model.safetensors.
std::string Mixed(const std::string& data, const std::string& dir, const std::string& config_from,
                  const std::string& weights_from) {
  const std::string out = data + "/" + dir;
  fs::create_directories(out);
  fs::copy_file(data + "/" + config_from + "/config.json", out + "/config.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(data + "/" + weights_from + "/model.safetensors", out + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  return out;
}

TEST_F(DFlash2E2eTest, AFamilyMismatchIsOneLine) {
  // A DFlash 2 config over DFlash 1 weights.
  const std::string a = Mixed(data_, "v2-config-v1-weights", "drafter2", "drafter");
  CommandResult r = Cli({"validate", a});
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_THAT(r.out, HasSubstr("config.json describes a DFlash 2 drafter (DFlash2DraftModel) but "
                               "the checkpoint holds DFlash 1 weights"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("missing tensor 'layers.0.attention_conv")));
  // DFlash 2 weights under a DFlash 1 config, even with unexpected tensors allowed.
  const std::string b = Mixed(data_, "v1-config-v2-weights", "drafter", "drafter2");
  CommandResult u = Cli({"validate", b, "--allow-unexpected"});
  EXPECT_EQ(u.exit_code, 3) << u.out;
  EXPECT_THAT(u.out, HasSubstr("DFlash 2 tensors (attention_conv, mlp_conv, candidate_selector) "
                               "but config.json describes a DFlash 1 drafter"));
}

TEST_F(DFlash2E2eTest, OlderRulesAreRefusedForDFlash2) {
  CommandResult r = Cli({"eval", "--drafter", "m2", "--dataset", "d2", "--semantics", "zlab-2025"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION: semantics 'zlab-2025' predates DFlash 2"));
}

}  // namespace
}  // namespace dflash
