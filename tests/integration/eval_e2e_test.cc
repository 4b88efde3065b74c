// The whole path on generated files: the real dflash-evald and dflash-eval,
// a tiny target, drafter and dataset from tools/dflash_ref/make_fixture.py,
// and results checked against the independent Python reference's numbers.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "client/eval_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::CommandResult;
using ::dflash::testing::ExpectSameMetrics;
using ::dflash::testing::RunReferenceEval;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using json = nlohmann::json;

// A copy of the fixture's drafter in `dir`, last modified an hour ago (its
// writer long done), so the server maps it instead of copying it.
void CopyAgedDrafter(const std::string& from, const std::string& dir) {
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) {
    const std::string to = dir + "/" + f;
    fs::copy_file(from + "/" + f, to, fs::copy_options::overwrite_existing);
    struct timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= 3600;
    times[1] = times[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, to.c_str(), times, 0), 0) << to;
  }
}

class EvalE2eTest : public testing::TinyServerTest {
 protected:
  static json Expected(const std::string& name) {
    std::ifstream in(data_ + "/expected/" + name);
    return json::parse(in);
  }
};

TEST_F(EvalE2eTest, AnchorModeMatchesTheReference) {
  json got = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--mode", "anchor", "--anchors",
                      "all", "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("anchor_all.json"));
  EXPECT_GT(got["acceptLengthPooled"].get<double>(), 1.0);  // the fixture is drafter-made
}

TEST_F(EvalE2eTest, ReplayModeMatchesTheReference) {
  json got = CliJson(
      {"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay", "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("replay.json"));
}

TEST_F(EvalE2eTest, HumanOutputShowsAcceptLengthAndPositions) {
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("accept length (pooled over blocks)"));
  EXPECT_THAT(r.out, HasSubstr("+ 1 bonus token from the target"));
  // One screen by default: the intervals on one line, the rest named.
  EXPECT_THAT(r.out, HasSubstr("95% intervals (percentile bootstrap over samples, 1000 "
                               "resamples): accept length ["));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("more with --detail: histogram, draft-length "
                                              "curve, per-position intervals, [0-9]+ slice\\(s\\), "
                                              "timing\n"));
  EXPECT_EQ(r.out.find("accepted leading matches per block (n)"), std::string::npos);
  CommandResult detail =
      Cli({"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay", "--detail"});
  ASSERT_EQ(detail.exit_code, 0) << detail.err;
  EXPECT_THAT(detail.out, HasSubstr("accepted leading matches per block (n)"));
  EXPECT_THAT(detail.out, HasSubstr("slices (docs/slices.md): "));
  EXPECT_THAT(detail.out, HasSubstr("time: setup "));
  EXPECT_EQ(detail.out.find("more with --detail"), std::string::npos);
}

TEST_F(EvalE2eTest, SplitFeatureLayoutGivesTheSameNumbers) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-split", "--name", "split"}).exit_code, 0);
  json a = CliJson({"eval", "--drafter", "m", "--dataset", "split", "--anchors", "all",
                    "--semantics", "zlab-2025"});
  ExpectSameMetrics(a, Expected("anchor_all.json"));
}

TEST_F(EvalE2eTest, MissingLayerIsRefusedWithBothLists) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-4layers", "--name", "four"}).exit_code, 0);
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "four"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("FAILED_PRECONDITION: drafter needs layer 9; dataset holds [1, 3, 5, 7]"));
}

TEST_F(EvalE2eTest, TrainingCheckpointValidatesAndLoadsThroughTheSameCall) {
  CommandResult v = Cli({"validate", data_ + "/drafter-pt"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("OK  "));
  EXPECT_THAT(v.out, HasSubstr("stripped wrapper prefix"));
  EXPECT_THAT(v.out, HasSubstr("skipped (not tensors)"));
  // The same weights as the safetensors drafter: same numbers.
  json got = CliJson({"eval", "--checkpoint", data_ + "/drafter-pt", "--dataset", "d", "--anchors",
                      "all", "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("anchor_all.json"));
}

TEST_F(EvalE2eTest, LoadingTheSameCheckpointTwiceReusesIt) {
  json again = CliJson({"load-drafter", data_ + "/drafter", "--name", "m"});
  EXPECT_EQ(again["reused"], true);
  CommandResult other = Cli({"load-drafter", data_ + "/drafter-pt", "--name", "m"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err,
              HasSubstr("ALREADY_EXISTS: a different drafter is already resident as 'm'"));
}

TEST_F(EvalE2eTest, ListShowsEveryResidentObject) {
  json ls = CliJson({"ls"});
  std::vector<std::string> names;
  for (const json& r : ls["resources"]) names.push_back(r["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"t", "d", "m"}));
  for (const json& r : ls["resources"]) {
    EXPECT_GT(std::stoll(r["bytes"].get<std::string>()), 0) << r.dump();
    EXPECT_FALSE(r["fingerprint"].get<std::string>().empty()) << r.dump();
  }
}

TEST_F(EvalE2eTest, PathsOutsideTheDataRootsAreRefused) {
  CommandResult r = Cli({"validate", "/etc"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("PERMISSION_DENIED: path '/etc' is outside the server's data roots"));
  CommandResult up = Cli({"load-dataset", data_ + "/../../../etc"});
  EXPECT_EQ(up.exit_code, 1);
  EXPECT_THAT(up.err, HasSubstr("PERMISSION_DENIED"));
  CommandResult missing = Cli({"validate", data_ + "/no-such-drafter"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
}

TEST_F(EvalE2eTest, CorruptFilesAreCleanErrorsAndTheServerKeepsServing) {
  // A drafter directory whose safetensors header claims more bytes than exist.
  fs::create_directories(data_ + "/broken");
  fs::copy_file(data_ + "/drafter/config.json", data_ + "/broken/config.json",
                fs::copy_options::overwrite_existing);
  {
    std::ofstream out(data_ + "/broken/model.safetensors", std::ios::binary);
    const uint64_t len = 1u << 20;
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << "{}";
  }
  CommandResult r = Cli({"validate", data_ + "/broken"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(r.err, HasSubstr("model.safetensors"));
  client::EvalClient c(server_->address(), std::chrono::seconds(10));
  EXPECT_OK(c.Health());
  EXPECT_EQ(Cli({"info"}).exit_code, 0);
}

TEST_F(EvalE2eTest, WrongTargetNamesListWhatWasTriedAndWhatExists) {
  // A copy of the target whose index spells embed_tokens differently.
  const std::string t = data_ + "/target-renamed";
  fs::create_directories(t);
  for (const auto& e : fs::directory_iterator(data_ + "/target")) {
    fs::copy_file(e.path(), t + "/" + e.path().filename().string(),
                  fs::copy_options::overwrite_existing);
  }
  json index;
  {
    std::ifstream in(t + "/model.safetensors.index.json");
    index = json::parse(in);
  }
  json& map = index["weight_map"];
  map["model.embedding_tokens.weight"] = map["model.embed_tokens.weight"];
  map.erase("model.embed_tokens.weight");
  std::ofstream(t + "/model.safetensors.index.json") << index.dump();
  CommandResult r = Cli({"load-target", t, "--name", "renamed"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(r.err, HasSubstr("model.embed_tokens.weight"));
  EXPECT_THAT(r.err, HasSubstr("model.language_model.embed_tokens.weight"));
  EXPECT_THAT(r.err, HasSubstr("model.embedding_tokens.weight"));  // nearest present
  json ls = CliJson({"ls", "--kind", "target"});
  EXPECT_EQ(ls["resources"].size(), 1u);  // nothing half-loaded
}

// A copy of the safetensors drafter with its config edited by `edit`.
std::string EditedDrafter(const std::string& data, const std::string& name,
                          const std::function<void(json&)>& edit) {
  const std::string dir = data + "/" + name;
  fs::create_directories(dir);
  fs::copy_file(data + "/drafter/model.safetensors", dir + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  json config;
  {
    std::ifstream in(data + "/drafter/config.json");
    config = json::parse(in);
  }
  edit(config);
  std::ofstream(dir + "/config.json") << config.dump(2);
  return dir;
}

TEST_F(EvalE2eTest, FcWidthAgainstFewerConfiguredLayersIsNamed) {
  const std::string dir = EditedDrafter(data_, "four-layer-config", [](json& c) {
    c["dflash_config"]["target_layer_ids"] = json::array({1, 3, 5, 7});
  });
  CommandResult v = Cli({"validate", dir});
  EXPECT_EQ(v.exit_code, 3) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("FAILED  "));
  EXPECT_THAT(v.out, HasSubstr("fc.weight takes 160 input features = 5 target layers x 32, but "
                               "the config lists 4 target_layer_ids [1, 3, 5, 7] (128 features)"));
  CommandResult load = Cli({"load-drafter", dir, "--name", "four"});
  EXPECT_EQ(load.exit_code, 1);
  EXPECT_THAT(load.err, HasSubstr("INVALID_ARGUMENT: checkpoint '"));
  EXPECT_THAT(load.err, HasSubstr("nothing was loaded"));
  EXPECT_EQ(CliJson({"ls", "--kind", "drafter"})["resources"].size(), 1u);
}

TEST_F(EvalE2eTest, MissingAndExtraLayersAreEachNamed) {
  const std::string more = EditedDrafter(data_, "three-layer-config", [](json& c) {
    c["num_hidden_layers"] = 3;
    c["layer_types"].push_back("full_attention");
  });
  CommandResult v = Cli({"validate", more});
  EXPECT_EQ(v.exit_code, 3) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("layers.2.self_attn.q_proj.weight"));
  EXPECT_THAT(v.out, HasSubstr("MISSING"));

  const std::string fewer = EditedDrafter(data_, "one-layer-config", [](json& c) {
    c["num_hidden_layers"] = 1;
    c["layer_types"] = json::array({"sliding_attention"});
  });
  CommandResult f = Cli({"validate", fewer});
  EXPECT_EQ(f.exit_code, 3) << f.out << f.err;
  EXPECT_THAT(f.out, HasSubstr("UNEXPECTED"));
  EXPECT_THAT(f.out, HasSubstr("layers.1.mlp.down_proj.weight"));
  CommandResult allowed = Cli({"validate", fewer, "--allow-unexpected"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out;
}

TEST_F(EvalE2eTest, ShorterBlocksAndLimitsMatchTheReference) {
  // A B=8 drafter scored at B=4, evenly spaced anchors, at most 3 per sample.
  json anchor = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--anchors", "even",
                         "--max-blocks", "3", "--block-size", "4"});
  ExpectSameMetrics(anchor, RunReferenceEval(data_, "drafter", "dataset",
                                             {"--mode", "anchor", "--anchors", "even",
                                              "--max-blocks", "3", "--block-size", "4"}));
  // Replay cut short by max_new_tokens, on the first 4 samples.
  json replay = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--mode", "replay",
                         "--max-new-tokens", "12", "--max-samples", "4"});
  ExpectSameMetrics(replay, RunReferenceEval(data_, "drafter", "dataset",
                                             {"--mode", "replay", "--max-new-tokens", "12",
                                              "--max-samples", "4"}));
  for (const json& s : replay["perSample"]) {
    EXPECT_LE(s["blocks"].get<int64_t>(), 12) << s.dump();
  }
}

TEST_F(EvalE2eTest, BlockSizeAboveTheDraftersIsRefused) {
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "d", "--block-size", "64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.err,
      HasSubstr("INVALID_ARGUMENT: block_size 64 must be in [2, 8] (the drafter's block size)"));
}

TEST_F(EvalE2eTest, RewritingALoadedCheckpointInPlaceCannotCrashTheServer) {
  // torch.save and most writers truncate the file first: resident weights
  // must not be views of the file, or the next evaluation dies of SIGBUS.
  const std::string dir = data_ + "/rewritten";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(data_ + "/drafter/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
  }
  ASSERT_EQ(Cli({"load-drafter", dir, "--name", "rw"}).exit_code, 0);
  {
    std::ofstream out(dir + "/model.safetensors", std::ios::binary | std::ios::trunc);
    out << "not weights any more";
  }
  json got = CliJson({"eval", "--drafter", "rw", "--dataset", "d", "--anchors", "all",
                      "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("anchor_all.json"));
  EXPECT_EQ(Cli({"unload", "drafter", "rw"}).exit_code, 0);
}

TEST_F(EvalE2eTest, RenamingANewCheckpointOverAMappedOneKeepsTheResidentWeights) {
  const std::string dir = data_ + "/renamed";
  CopyAgedDrafter(data_ + "/drafter", dir);
  json loaded = CliJson({"load-drafter", dir, "--name", "mapped"});
  const json& res = loaded["resource"];
  ASSERT_TRUE(res.contains("mappedBytes")) << loaded.dump();
  EXPECT_EQ(res["mappedBytes"], res["bytes"]);  // fp32 stored, fp32 resident: all views
  // The trainer's next checkpoint under a temporary name, renamed into place.
  {
    std::ofstream out(dir + "/model.safetensors.tmp", std::ios::binary);
    out << "the next step's weights";
  }
  ASSERT_EQ(
      std::rename((dir + "/model.safetensors.tmp").c_str(), (dir + "/model.safetensors").c_str()),
      0);
  json got = CliJson({"eval", "--drafter", "mapped", "--dataset", "d", "--anchors", "all",
                      "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("anchor_all.json"));
  EXPECT_EQ(Cli({"unload", "drafter", "mapped"}).exit_code, 0);
}

TEST_F(EvalE2eTest, AMappedCheckpointRewrittenInPlaceFailsTheEvalNotTheServer) {
  const std::string dir = data_ + "/inplace";
  CopyAgedDrafter(data_ + "/drafter", dir);
  ASSERT_EQ(Cli({"load-drafter", dir, "--name", "inplace"}).exit_code, 0);
  const uintmax_t size = fs::file_size(dir + "/model.safetensors");
  {
    std::ofstream out(dir + "/model.safetensors", std::ios::binary | std::ios::trunc);
    out << "not weights any more";
  }
  CommandResult r = Cli({"eval", "--drafter", "inplace", "--dataset", "d"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(
                         "FAILED_PRECONDITION: '", dir,
                         "/model.safetensors' was written in place "
                         "since it was loaded (",
                         size,
                         " bytes then, 20 now); write checkpoints "
                         "to a temporary name and rename them into place, or run the server with "
                         "--no-mmap; unload and load it again to evaluate the new file")));
  // The server is alive and the other drafter still evaluates.
  json got = CliJson(
      {"eval", "--drafter", "m", "--dataset", "d", "--anchors", "all", "--semantics", "zlab-2025"});
  ExpectSameMetrics(got, Expected("anchor_all.json"));
  EXPECT_EQ(Cli({"unload", "drafter", "inplace"}).exit_code, 0);
}

}  // namespace
}  // namespace dflash
