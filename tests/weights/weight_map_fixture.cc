#include "weights/weight_map_fixture.h"

namespace dflash::weights::testing {

std::vector<TensorSpec> LayerSpecs(int i) {
  const std::string p = "layers." + std::to_string(i) + ".";
  return {
      {p + "input_layernorm.weight", {kH}},       {p + "post_attention_layernorm.weight", {kH}},
      {p + "self_attn.q_proj.weight", {kQ, kH}},  {p + "self_attn.k_proj.weight", {kKv, kH}},
      {p + "self_attn.v_proj.weight", {kKv, kH}}, {p + "self_attn.o_proj.weight", {kH, kQ}},
      {p + "self_attn.q_norm.weight", {kD}},      {p + "self_attn.k_norm.weight", {kD}},
      {p + "mlp.gate_proj.weight", {kI, kH}},     {p + "mlp.up_proj.weight", {kI, kH}},
      {p + "mlp.down_proj.weight", {kH, kI}},
  };
}

std::vector<TensorSpec> Schema(int layers, int target_layers) {
  std::vector<TensorSpec> s = {
      {"fc.weight", {kH, target_layers * kH}}, {"hidden_norm.weight", {kH}}, {"norm.weight", {kH}}};
  for (int i = 0; i < layers; ++i) {
    for (TensorSpec& t : LayerSpecs(i)) s.push_back(t);
  }
  return s;
}

std::vector<std::pair<std::string, at::Tensor>> Checkpoint(const std::vector<TensorSpec>& schema,
                                                           const std::string& prefix,
                                                           at::ScalarType dtype) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  int seed = 1;
  for (const TensorSpec& s : schema) {
    at::Tensor t = at::arange(c10::multiply_integers(s.shape), at::kFloat)
                       .reshape(s.shape)
                       .mul(0.01 * seed++)
                       .to(dtype);
    out.emplace_back(prefix + s.name, t);
  }
  return out;
}

const TensorEntry* Entry(const WeightReport& r, const std::string& name) {
  for (const TensorEntry& e : r.tensors) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace dflash::weights::testing
