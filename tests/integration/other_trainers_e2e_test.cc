// Drafters saved by the other DFlash trainers, end to end through the real
// server and client: tools/dflash_ref/make_other_layouts.py rewrites the
// tiny fixture's drafters in speculators (dflash, dflash2) and
// Model-Optimizer layouts, and each must give exactly the numbers of its
// z-lab-layout twin (the same weights): the Python reference's for the
// speculators twin of `drafter`, the service's own for the others.
#include <cstdio>
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

class OtherTrainersE2eTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    SetUpTinyServer({});
    CommandResult gen = testing::RunCommand(
        {testing::BinaryFromEnv("DFLASH_FIXTURE_PY"),
         testing::BinaryFromEnv("DFLASH_SOURCE_DIR") + "/tools/dflash_ref/make_other_layouts.py",
         data_},
        {}, 300);
    ASSERT_EQ(gen.exit_code, 0) << gen.out << gen.err;
    ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset2", "--name", "d2"}).exit_code, 0);
  }
  static void Load(const std::string& dir, const std::string& name) {
    CommandResult r = Cli({"load-drafter", data_ + "/" + dir, "--name", name});
    ASSERT_EQ(r.exit_code, 0) << dir << ": " << r.out << r.err;
  }
  static json Expected(const std::string& name) {
    std::ifstream in(data_ + "/expected/" + name);
    EXPECT_TRUE(in.good()) << "no expected/" << name;
    return in.good() ? json::parse(in) : json::object();
  }
  static json Eval(const std::string& drafter, const std::string& dataset,
                   const std::string& mode) {
    return CliJson(
        {"eval", "--drafter", drafter, "--dataset", dataset, "--mode", mode, "--anchors", "all"});
  }
  // Two service results, count for count (names and timings aside).
  static void ExpectSameResult(const json& got, const json& want) {
    ASSERT_TRUE(want.contains("positions")) << want.dump();
    for (const char* key :
         {"blocks", "tau", "acceptLengthPooled", "positions", "family", "semantics"}) {
      EXPECT_EQ(got.value(key, json()), want.value(key, json())) << key;
    }
    for (const auto& [key, value] : want.items()) {
      if (key.rfind("selector", 0) == 0) EXPECT_EQ(got.value(key, json()), value) << key;
    }
  }
};

TEST_F(OtherTrainersE2eTest, SpeculatorsDFlashGivesTheReferenceNumbers) {
  Load("spec-drafter", "spec1");
  ExpectSameMetrics(Eval("spec1", "d", "anchor"), Expected("current/anchor_all.json"));
  ExpectSameMetrics(Eval("spec1", "d", "replay"), Expected("current/replay.json"));
  ExpectSameResult(Eval("spec1", "d", "anchor"), Eval("m", "d", "anchor"));
}

TEST_F(OtherTrainersE2eTest, SpeculatorsDFlash2MatchesItsZlabTwin) {
  Load("drafter2-plain", "z2");
  Load("spec-drafter2", "spec2");
  const json want = Eval("z2", "d2", "anchor");
  EXPECT_EQ(want["family"], "DFlash 2");
  ExpectSameResult(Eval("spec2", "d2", "anchor"), want);
  ExpectSameResult(Eval("spec2", "d2", "replay"), Eval("z2", "d2", "replay"));
}

TEST_F(OtherTrainersE2eTest, ModelOptExportMatchesItsZlabTwin) {
  Load("drafter-bidir", "zb");
  Load("modelopt-drafter", "mo");
  ExpectSameResult(Eval("mo", "d", "anchor"), Eval("zb", "d", "anchor"));
  ExpectSameResult(Eval("mo", "d", "replay"), Eval("zb", "d", "replay"));
}

TEST_F(OtherTrainersE2eTest, ValidatePrintsTheMappingAndTheIgnoredTrainingCopies) {
  CommandResult r = Cli({"validate", data_ + "/spec-drafter"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("layout speculators dflash, read as z-lab's:"));
  EXPECT_THAT(r.out, HasSubstr("layer numbering: aux_hidden_state_layer_ids [2,4,6,8,10] "
                               "(vllm-capture-id: id 0 = embeddings, id k+1 = output of layer k) "
                               "-> target_layer_ids [1,3,5,7,9] (hf-layer: output of layer k = "
                               "hidden_states[k+1]); capture id->hf layer 2->1, 4->3, 6->5, 8->7, "
                               "10->9"));
  EXPECT_THAT(r.out, HasSubstr("verifier_norm.weight"));
  EXPECT_THAT(r.out, HasSubstr("verifier_lm_head.weight"));
  CommandResult m = Cli({"validate", data_ + "/modelopt-drafter"});
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_THAT(m.out, HasSubstr("layout Model-Optimizer, read as z-lab's:"));
  EXPECT_THAT(m.out, HasSubstr("dflash_config.causal false -> is_causal false"));
}

// A variant the service does not compute is refused by name at load.
TEST_F(OtherTrainersE2eTest, RefusedVariantsSayWhy) {
  const std::string dir = data_ + "/spec-dspark";
  fs::create_directories(dir);
  json cfg = json::parse(std::ifstream(data_ + "/spec-drafter/config.json"));
  cfg["speculators_model_type"] = "dspark";
  std::ofstream(dir + "/config.json") << cfg.dump();
  fs::copy_file(data_ + "/spec-drafter/model.safetensors", dir + "/model.safetensors");
  CommandResult r = Cli({"load-drafter", dir, "--name", "ds"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("config field 'speculators_model_type' is 'dspark': not computed "
                               "by this service (it reads speculators 'dflash' and 'dflash2' "
                               "checkpoints)"));
}

// Model-Optimizer's per-conversation dumps, and the same files declared in
// vLLM capture ids, evaluate exactly as the SpecForge-layout dataset.
TEST_F(OtherTrainersE2eTest, ModelOptCapturesAndCaptureIdManifestGiveTheReferenceNumbers) {
  for (const auto& [dir, name] : {std::pair<const char*, const char*>{"dataset-modelopt", "dmo"},
                                  {"dataset-capture-ids", "dci"}}) {
    CommandResult r = Cli({"load-dataset", data_ + "/" + dir, "--name", name});
    ASSERT_EQ(r.exit_code, 0) << dir << ": " << r.out << r.err;
    ExpectSameMetrics(Eval("m", name, "anchor"), Expected("current/anchor_all.json"));
    ExpectSameMetrics(Eval("m", name, "replay"), Expected("current/replay.json"));
  }
}

// Model-Optimizer's "hidden_states" is the final hidden state [seq, H], not
// SpecForge's concatenated layers: declared as such, the width says so.
TEST_F(OtherTrainersE2eTest, ModelOptFinalHiddenStateIsNotTakenForTheLayers) {
  const std::string dir = data_ + "/dataset-modelopt-wrong-key";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(data_ + "/dataset-modelopt")) {
    fs::copy_file(e.path(), dir + "/" + e.path().filename().string(),
                  fs::copy_options::overwrite_existing);
  }
  std::ofstream(dir + "/dataset.json")
      << R"({"hidden_size": 32, "features": {"hidden_states": [1, 3, 5, 7, 9]}})";
  CommandResult r = Cli({"load-dataset", dir, "--name", "wrong"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("'hidden_states' has width 32; expected 5 layers x hidden size 32 "
                               "= 160 (hidden_size from the manifest)"));
}

// speculators ids written in HF numbering by mistake: the mapping shows
// the shift, and the drafter asks for a layer the dataset does not hold.
TEST_F(OtherTrainersE2eTest, OffByOneDeclaredNumberingIsCaught) {
  CommandResult v = Cli({"validate", data_ + "/spec-drafter-shifted"});
  ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("capture id->hf layer 1->0, 3->2, 5->4, 7->6, 9->8"));
  Load("spec-drafter-shifted", "shifted");
  CommandResult r = Cli({"eval", "--drafter", "shifted", "--dataset", "d", "--mode", "anchor"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("FAILED_PRECONDITION: drafter needs layers 0, 2, 4, 6, 8; dataset holds "
                        "[1, 3, 5, 7, 9] (hf-layer; as vllm-capture-id: needs 1, 3, 5, 7, 9, "
                        "holds [2, 4, 6, 8, 10]); the dataset holds every layer the drafter "
                        "needs shifted by +1: check the layer numbering declared by the drafter "
                        "(speculators aux_hidden_state_layer_ids count vllm-capture-id) and by "
                        "the dataset (dataset.json 'layer_numbering')"));
}

// vLLM / speculators hs_{i}.safetensors: no loss mask, so the manifest's
// prompt lengths (here reproducing the SpecForge masks) or "all-positions".
TEST_F(OtherTrainersE2eTest, VllmCapturesGiveTheReferenceNumbers) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-vllm", "--name", "dvl"}).exit_code, 0);
  ExpectSameMetrics(Eval("m", "dvl", "anchor"), Expected("current/anchor_all.json"));
  ExpectSameMetrics(Eval("m", "dvl", "replay"), Expected("current/replay.json"));
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-vllm-all", "--name", "dva"}).exit_code, 0);
  CommandResult ls = Cli({"ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("layer ids declared as vllm-capture-id: hf-layer [1, 3, 5, 7, 9] "
                                "= vllm-capture-id [2, 4, 6, 8, 10]; responses of 6 samples (no "
                                "loss mask in the files) from dataset.json prompt_lengths: "
                                "positions >= P"));
  EXPECT_THAT(ls.out, HasSubstr("from dataset.json loss_mask all-positions: every position "
                                "counts"));
  const json all = Eval("m", "dva", "anchor");
  const json want = Expected("current/anchor_all.json");
  ASSERT_TRUE(all.contains("blocks")) << all.dump();
  EXPECT_GT(std::stoll(all["blocks"].get<std::string>()), want["blocks"].get<int64_t>());
}

// Issue 30: every reader streams (kept on disk, read back in chunks of one
// sample here) and still gives the reference's numbers: SpecForge, the
// EAGLE-3 split layout, Model-Optimizer dumps, capture ids, vLLM captures.
TEST_F(OtherTrainersE2eTest, StreamedCapturesOfEveryReaderGiveTheReferenceNumbers) {
  for (const char* dir :
       {"dataset", "dataset-split", "dataset-modelopt", "dataset-capture-ids", "dataset-vllm"}) {
    SCOPED_TRACE(dir);
    const std::string name = std::string("stream-") + dir;
    CommandResult r = Cli({"load-dataset", data_ + "/" + dir, "--name", name, "--stream",
                           "--stream-budget", "20000"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("streamed from disk"));
    const json anchor = Eval("m", name, "anchor");
    ExpectSameMetrics(anchor, Expected("current/anchor_all.json"));
    ExpectSameMetrics(Eval("m", name, "replay"), Expected("current/replay.json"));
    ASSERT_TRUE(anchor.contains("shards")) << anchor.dump();
    EXPECT_EQ(anchor["shards"].size(), 6u);  // one sample a chunk
  }
}

TEST_F(OtherTrainersE2eTest, VllmCaptureDefectsSayWhat) {
  CommandResult r = Cli({"load-dataset", data_ + "/dataset-vllm-nomask", "--name", "nm"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("sample 'hs_0.safetensors': records no loss mask; declare where "
                               "responses start in dataset.json: \"prompt_lengths\": [P per "
                               "sample index] or \"loss_mask\": \"all-positions\""));
  r = Cli({"load-dataset", data_ + "/dataset-vllm-fp8", "--name", "f8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("sample 'hs_0.safetensors': holds 'hidden_states_scale': an FP8 "
                               "capture with scales; this service does not dequantize FP8 hidden "
                               "states; capture in bf16 or fp32"));
}

// speculators' own vocabulary: the identity (every target token, d2t zeros)
// gives the twin's numbers exactly; a reduced one (the 3V/8 most frequent
// tokens) the Python reference's with d2t, and the result says how many
// scored labels it holds.
TEST_F(OtherTrainersE2eTest, DraftVocabularyGivesTheReferenceNumbers) {
  Load("spec-drafter-fullvocab", "fullv");
  const json full = Eval("fullv", "d", "anchor");
  ExpectSameMetrics(full, Expected("current/anchor_all.json"));
  ExpectSameMetrics(Eval("fullv", "d", "replay"), Expected("current/replay.json"));
  EXPECT_EQ(full.value("draftVocabSize", json()), "128");
  EXPECT_EQ(full.value("labelsInDraftVocab", json()), full["tokensScored"]);
  Load("spec-drafter-fullvocab-head", "headv");  // the head alone: the identity
  ExpectSameMetrics(Eval("headv", "d", "anchor"), Expected("current/anchor_all.json"));

  Load("spec-drafter-reducedvocab", "redv");
  const json red = Eval("redv", "d", "anchor");
  ExpectSameMetrics(red, Expected("reducedvocab/anchor_all.json"));
  ExpectSameMetrics(Eval("redv", "d", "replay"), Expected("reducedvocab/replay.json"));
  EXPECT_NE(red["acceptLengthPooled"], full["acceptLengthPooled"]);  // the heads differ
  const json cov = Expected("reducedvocab/coverage.json");
  const int64_t size = cov["draft_vocab_size"], inside = cov["labels_in_draft_vocab"],
                scored = cov["tokens_scored"];
  EXPECT_EQ(red.value("draftVocabSize", json()), std::to_string(size));
  EXPECT_EQ(red.value("labelsInDraftVocab", json()), std::to_string(inside));
  EXPECT_EQ(red.value("tokensScored", json()), std::to_string(scored));
  EXPECT_LT(inside, scored);
  CommandResult text =
      Cli({"eval", "--drafter", "redv", "--dataset", "d", "--mode", "anchor", "--anchors", "all"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  char share[32];
  std::snprintf(share, sizeof(share), "%.1f%%", 100.0 * inside / scored);
  EXPECT_THAT(text.out, HasSubstr("draft vocabulary " + std::to_string(size) +
                                  " tokens (d2t): " + std::to_string(inside) + " of " +
                                  std::to_string(scored) + " scored labels (" + share +
                                  ") inside it; the rest can never be drafted"));
}

TEST_F(OtherTrainersE2eTest, DraftVocabularyDefectsSayWhat) {
  CommandResult r = Cli({"load-drafter", data_ + "/spec-drafter-badvocab-d2t-float"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("tensor 'd2t' has dtype F32; expected I64 (an index table, read "
                               "as stored)"));
  r = Cli({"load-drafter", data_ + "/spec-drafter-badvocab-t2d"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("t2d marks 80 target ids but d2t maps the 48 draft indices onto "
                               "other (or repeated) ids: the two tables disagree"));
}

// Issue 18 item 5: a dataset holding the drafter's layers under both
// readings. The off-by-one drafter (ids [0, 2, 4, 6, 8]) evaluates as
// declared, and a warning gives the first-position accuracy of both readings
// on a small sample; the shifted one equals the correct drafter's own
// accuracy on the same sample (4 samples, 8 even anchors each).
TEST_F(OtherTrainersE2eTest, LayerOffsetCheckNamesBothAccuracies) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-both-readings", "--name", "both"}).exit_code, 0);
  Load("spec-drafter-shifted", "shifted2");
  const json got = Eval("shifted2", "both", "anchor");
  ASSERT_TRUE(got.contains("warnings")) << got.dump();
  const std::string warnings = got["warnings"].dump();
  const json small =
      CliJson({"eval", "--drafter", "m", "--dataset", "d", "--mode", "anchor", "--anchors", "even",
               "--max-samples", "4", "--max-blocks", "8", "--metrics", "acceptance"});
  char right[32];
  const json& p1 = small["positions"][0];  // scored to the first miss: accepted / counted
  std::snprintf(
      right, sizeof(right), "%.4f",
      std::stod(p1["accepted"].get<std::string>()) / std::stod(p1["counted"].get<std::string>()));
  EXPECT_THAT(warnings, HasSubstr("layer numbering check: the dataset also holds the drafter's "
                                  "layers shifted by +1 ([1, 3, 5, 7, 9]); first-position "
                                  "accuracy on 4 sample(s), " +
                                  small["blocks"].get<std::string>() + " block(s): "));
  EXPECT_THAT(warnings,
              HasSubstr(" as declared ([0, 2, 4, 6, 8], hf-layer) vs " + std::string(right) +
                        " shifted by +1; the shifted reading scores higher: check the "
                        "layer numbering declared by the drafter and by the dataset (the "
                        "declared one was used; nothing was switched)"));
  // The correct drafter on the same data: its reading wins, also said.
  const json ok = Eval("m", "both", "anchor");
  EXPECT_THAT(ok["warnings"].dump(),
              HasSubstr("shifted by -1 ([0, 2, 4, 6, 8]); first-position accuracy on 4 "
                        "sample(s), "));
  EXPECT_THAT(ok["warnings"].dump(), HasSubstr("the declared reading scores at least as high"));
}

}  // namespace
}  // namespace dflash
