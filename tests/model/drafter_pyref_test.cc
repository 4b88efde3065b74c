// ForwardBlocks against tests/fixtures/reference_forward.py, a torch
// re-statement of z-lab's DFlashDraftModel (one block per call, K/V of
// [context; block] concatenated, repeat_kv, eager attention).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "model/drafter_schema.h"
#include "model/legacy_options.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::model {
namespace {

using ::dflash::model::testing::Legacy;
using Json = nlohmann::json;

void WriteF32(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * 4);
}

config::DrafterConfig Config(const std::string& rope) {
  config::DrafterConfig c;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.num_hidden_layers = 3;
  c.attention_bias = rope == "yarn";
  c.sliding = {true, false, true};
  c.sliding_window = 5;
  c.block_size = 4;
  c.target_layer_ids = {1, 4, 7};
  c.mask_token_id = 63;
  c.rope.type = rope;
  c.rope.theta = 10000.0;
  if (rope == "linear") c.rope.factor = 2.5;
  if (rope == "llama3") {
    c.rope.factor = 8.0;
    c.rope.original_max_position_embeddings = 1024;
  }
  if (rope == "yarn") {
    c.rope.factor = 4.0;
    c.rope.original_max_position_embeddings = 64;
  }
  return c;
}

struct Case {
  config::DrafterConfig cfg;
  std::map<std::string, at::Tensor> weights;
  std::vector<at::Tensor> feats;
  at::Tensor x0, anchors, seqs;
  std::unique_ptr<dflash::testing::TempDir> dir;
};

// Random tiny drafter and blocks, written for the script.
Case Prepare(const std::string& rope) {
  Case k;
  k.dir = std::make_unique<dflash::testing::TempDir>();
  const dflash::testing::TempDir& dir = *k.dir;
  k.cfg = Config(rope);
  const config::DrafterConfig& c = k.cfg;
  auto& w = k.weights;
  at::manual_seed(11);
  Json manifest;
  manifest["config"] = {
      {"hidden_size", c.hidden_size},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"num_hidden_layers", c.num_hidden_layers},
      {"rms_norm_eps", c.rms_norm_eps},
      {"sliding", c.sliding},
      {"sliding_window", c.sliding_window},
      {"block_size", c.block_size},
      {"rope",
       {{"type", c.rope.type},
        {"theta", c.rope.theta},
        {"factor", c.rope.factor},
        {"low_freq_factor", c.rope.low_freq_factor},
        {"high_freq_factor", c.rope.high_freq_factor},
        {"original_max_position_embeddings", c.rope.original_max_position_embeddings},
        {"beta_fast", c.rope.beta_fast},
        {"beta_slow", c.rope.beta_slow},
        {"attention_factor", c.rope.attention_factor}}}};
  for (const weights::TensorSpec& s : DrafterSchema(c, 24)) {
    at::Tensor t = at::randn(s.shape);
    if (s.name.find("norm") != std::string::npos)
      t = 1.0 + 0.1 * t;
    else if (s.name.find(".bias") != std::string::npos)
      t = 0.1 * t;
    else
      t = t / std::sqrt(static_cast<double>(s.shape[1]));
    w[s.name] = t;
    manifest["tensors"][s.name] = s.shape;
    WriteF32(dir.Join(s.name + ".bin"), t);
  }
  k.feats = {at::randn({17, 72}), at::randn({9, 72})};
  auto& feats = k.feats;
  for (size_t s = 0; s < feats.size(); ++s) {
    manifest["features"].push_back(feats[s].sizes().vec());
    WriteF32(dir.Join("features." + std::to_string(s) + ".bin"), feats[s]);
  }
  const std::vector<std::pair<int64_t, int64_t>> blocks = {{0, 1}, {0, 8}, {0, 16},
                                                           {1, 1}, {1, 4}, {1, 8}};
  at::Tensor embed = at::randn({64, 32});
  std::vector<at::Tensor> xs;
  std::vector<int64_t> anchors, seqs;
  for (const auto& [s, a] : blocks) {
    manifest["blocks"].push_back({s, a});
    std::vector<int64_t> ids(c.block_size, c.mask_token_id);
    ids[0] = (s * 31 + a * 7) % 63;
    xs.push_back(embed.index_select(0, at::tensor(ids, at::kLong)));
    anchors.push_back(a);
    seqs.push_back(s);
  }
  k.x0 = at::stack(xs);
  k.anchors = at::tensor(anchors, at::kLong);
  k.seqs = at::tensor(seqs, at::kLong);
  WriteF32(dir.Join("x0.bin"), k.x0);
  std::ofstream(dir.Join("manifest.json")) << manifest.dump();
  return k;
}

TEST(PythonReferenceTest, ForwardMatchesTorchReference) {
  const std::string py = dflash::testing::BinaryFromEnv("DFLASH_FIXTURE_PY");
  const std::string script =
      dflash::testing::BinaryFromEnv("DFLASH_SOURCE_DIR") + "/tests/fixtures/reference_forward.py";
  auto probe = dflash::testing::RunCommand({py, "-c", "import torch, numpy"});
  if (probe.exit_code != 0) GTEST_SKIP() << py << " has no torch: " << probe.err;
  const std::vector<std::string> ropes = {"default", "linear", "llama3", "yarn"};
  std::vector<Case> cases;
  std::vector<std::string> argv = {py, script};
  for (const std::string& r : ropes) {
    cases.push_back(Prepare(r));
    argv.push_back(cases.back().dir->path());
  }
  auto run = dflash::testing::RunCommand(argv);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const config::DrafterConfig& c = k.cfg;
    std::ifstream in(k.dir->Join("out.bin"), std::ios::binary);
    at::Tensor want = at::empty({k.x0.size(0), c.block_size, 32});
    in.read(reinterpret_cast<char*>(want.data_ptr<float>()), want.numel() * 4);
    ASSERT_TRUE(in.good());
    ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(c, k.weights));
    ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(k.feats));
    ASSERT_OK_AND_ASSIGN(at::Tensor got, m.ForwardBlocks(k.x0, k.anchors, k.seqs, ctx, Legacy()));
    at::Tensor lm_head = at::randn({64, 32}) * 0.3;
    at::Tensor lg = at::matmul(got.narrow(1, 1, c.block_size - 1), lm_head.t());
    at::Tensor lw = at::matmul(want.narrow(1, 1, c.block_size - 1), lm_head.t());
    const double rel = (lg - lw).abs().max().item<double>() / lw.abs().max().item<double>();
    std::printf("[ torch reference, rope %s ] max rel diff of logits %.3g\n", ropes[i].c_str(),
                rel);
    EXPECT_LE(rel, 1e-5);
    EXPECT_TRUE(at::equal(lg.argmax(-1), lw.argmax(-1)));
  }
}

}  // namespace
}  // namespace dflash::model
