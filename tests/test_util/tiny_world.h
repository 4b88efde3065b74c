// File: tiny_world.h
// A tiny random DFlash 1 world for in-process tests of eval/ and core/: a
// drafter config (as config.json text, parsed by the real parser), random
// weights from the schema, target embed_tokens / lm_head, and a dataset of a
// few sequences with random cached features. Everything is in memory and
// can be written to disk (drafter, target, dataset folders) for the loaders.
// Header-only: only tests that link torch include it (test_util itself is
// torch-free).
//
//   TinyWorld w = MakeTinyWorld(TinySpec{});
//   w.WriteDataset(dir.Join("data"));
//   ASSERT_OK_AND_ASSIGN(auto ds, data::EvalDataset::Load({..., dir.Join("data")}));
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "config/drafter_config_reader.h"
#include "model/drafter_schema.h"
#include "test_util/safetensors_writer.h"
#include "test_util/torch_save_writer.h"
#include "weights/target_tensors.h"

namespace dflash::testing {

struct TinySpec {
  int64_t vocab = 16;
  int64_t hidden = 16;  // H = H_t
  int64_t block_size = 4;
  int64_t layers = 2;
  std::vector<int> drafter_layers = {3, 1};     // target_layer_ids, in this order
  std::vector<int> dataset_layers = {1, 2, 3};  // columns of hidden_states
  std::vector<int64_t> lengths = {14, 11, 9, 17};
  std::vector<int64_t> prompts = {3, 2, 8, 5};  // loss_mask 0 on [0, prompt)
  uint64_t seed = 1;
  std::string extra_config;  // appended JSON members, e.g. R"("is_causal": false)"
};

struct TinyWorld {
  TinySpec spec;
  std::string config_json;
  config::DrafterConfig cfg;
  std::map<std::string, at::Tensor> weights;  // fp32, CPU
  at::Tensor embed, lm_head;                  // [V, H] fp32
  std::vector<std::vector<int64_t>> tokens;
  std::vector<std::vector<uint8_t>> masks;
  std::vector<at::Tensor> features;  // [L, |dataset_layers| * H] fp32

  weights::TargetTensors Target() const {
    weights::TargetTensors t;
    t.embed = embed;
    t.lm_head = lm_head;
    t.vocab_size = spec.vocab;
    t.hidden_size = spec.hidden;
    return t;
  }

  // [L, K*H]: the drafter's layers, in its order.
  at::Tensor DrafterFeatures(size_t s) const {
    std::vector<at::Tensor> cols;
    for (int id : spec.drafter_layers) {
      int64_t g = -1;
      for (size_t i = 0; i < spec.dataset_layers.size(); ++i) {
        if (spec.dataset_layers[i] == id) g = static_cast<int64_t>(i);
      }
      cols.push_back(features[s].narrow(1, g * spec.hidden, spec.hidden));
    }
    return at::cat(cols, 1);
  }

  static std::string Raw(const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }

  // dataset.json plus data_<i>.ckpt (torch.save zip) per sequence.
  void WriteDataset(const std::string& dir, const std::string& name = "tiny") const {
    nlohmann::json manifest = {{"name", name},
                               {"hidden_size", spec.hidden},
                               {"features", {{"hidden_states", spec.dataset_layers}}}};
    TempDirWrite(dir + "/dataset.json", manifest.dump());
    for (size_t s = 0; s < tokens.size(); ++s) {
      const int64_t L = static_cast<int64_t>(tokens[s].size());
      at::Tensor ids = at::tensor(tokens[s], at::kLong);
      std::vector<int64_t> m(masks[s].begin(), masks[s].end());
      at::Tensor mask = at::tensor(m, at::kLong);
      TorchSaveWriter w;
      w.Add("input_ids", "LongStorage", {L}, Raw(ids), 8)
          .Add("loss_mask", "LongStorage", {L}, Raw(mask), 8)
          .Add("hidden_states", "FloatStorage", {L, features[s].size(1)}, Raw(features[s]), 4);
      w.WriteTo(dir + "/data_" + std::to_string(s) + ".ckpt");
    }
  }

  // config.json + model.safetensors.
  void WriteDrafter(const std::string& dir) const {
    TempDirWrite(dir + "/config.json", config_json);
    SafetensorsWriter w;
    for (const auto& [name, t] : weights) w.AddValues(name, "F32", t.sizes().vec(), Values(t));
    w.WriteTo(dir + "/model.safetensors");
  }

  // config.json (vocab_size, hidden_size, untied) + model.safetensors.
  void WriteTarget(const std::string& dir) const {
    nlohmann::json config = {{"architectures", {"Qwen3ForCausalLM"}},
                             {"vocab_size", spec.vocab},
                             {"hidden_size", spec.hidden},
                             {"tie_word_embeddings", false}};
    TempDirWrite(dir + "/config.json", config.dump());
    SafetensorsWriter w;
    w.AddValues("model.embed_tokens.weight", "F32", {spec.vocab, spec.hidden}, Values(embed));
    w.AddValues("lm_head.weight", "F32", {spec.vocab, spec.hidden}, Values(lm_head));
    w.WriteTo(dir + "/model.safetensors");
  }

  static std::vector<double> Values(const at::Tensor& t) {
    at::Tensor d = t.to(at::kDouble).contiguous();
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  }
  static void TempDirWrite(const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
};

inline std::string TinyConfigJson(const TinySpec& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t i = 0; i < s.layers; ++i) layers.push_back("full_attention");
  nlohmann::json j = {
      {"architectures", {"DFlashDraftModel"}},
      {"hidden_size", s.hidden},
      {"num_attention_heads", 2},
      {"num_key_value_heads", 1},
      {"head_dim", 8},
      {"intermediate_size", 24},
      {"num_hidden_layers", s.layers},
      {"rms_norm_eps", 1e-6},
      {"layer_types", layers},
      {"rope_theta", 10000.0},
      {"vocab_size", s.vocab},
      {"block_size", s.block_size},
      {"dflash_config", {{"mask_token_id", s.vocab - 1}, {"target_layer_ids", s.drafter_layers}}}};
  std::string text = j.dump();
  if (!s.extra_config.empty()) text = text.substr(0, text.size() - 1) + "," + s.extra_config + "}";
  return text;
}

// Random weights (norms near 1, matrices scaled by 1/sqrt(fan_in)), embed
// and lm_head, features and tokens; the tokens are random (ids < V - 1, the
// mask id is V - 1) unless the caller replaces them.
inline TinyWorld MakeTinyWorld(const TinySpec& spec) {
  TinyWorld w;
  w.spec = spec;
  w.config_json = TinyConfigJson(spec);
  auto cfg = config::ParseDrafterConfig(w.config_json);
  if (!cfg.ok()) throw std::runtime_error(std::string(cfg.status().message()));
  w.cfg = *cfg;
  at::manual_seed(spec.seed);
  for (const weights::TensorSpec& t : model::DrafterSchema(w.cfg, spec.hidden)) {
    at::Tensor x = at::randn(t.shape);
    if (t.name.find("norm") != std::string::npos) {
      x = 1.0 + 0.1 * x;
    } else {
      x = x / std::sqrt(static_cast<double>(t.shape[1]));
    }
    w.weights[t.name] = x;
  }
  w.embed = at::randn({spec.vocab, spec.hidden});
  w.lm_head = at::randn({spec.vocab, spec.hidden}) * 0.5;
  const int64_t width = static_cast<int64_t>(spec.dataset_layers.size()) * spec.hidden;
  for (size_t s = 0; s < spec.lengths.size(); ++s) {
    const int64_t L = spec.lengths[s];
    w.features.push_back(at::randn({L, width}));
    at::Tensor t = at::randint(0, spec.vocab - 1, {L}, at::kLong);
    w.tokens.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + L);
    std::vector<uint8_t> m(L, 1);
    for (int64_t p = 0; p < std::min(L, spec.prompts[s]); ++p) m[p] = 0;
    w.masks.push_back(m);
  }
  return w;
}

}  // namespace dflash::testing
