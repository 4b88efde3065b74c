// File: weight_spec.h
// The expected tensors of a model, by schema name and shape, in the spirit
// of llama.cpp's loader: the checkpoint is checked against this list and any
// difference is reported, never guessed around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dflash::weights {

struct TensorSpec {
  std::string name;            // schema name: "layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // expected shape
  bool required = true;        // optional tensors (biases) may be absent
  // Other names the same tensor goes by (a codebook saved with ".weight");
  // the first one present is used, and the entry keeps the schema name.
  std::vector<std::string> aliases;
  // Non-empty: the tensor must be stored in exactly this dtype (safetensors
  // spelling, "I64", "BOOL") and is loaded in it, never cast to the model
  // dtype (index tables such as a reduced vocabulary's d2t).
  std::string exact_dtype;
};

// A tensor present in the file that the model does not use, on purpose.
struct IgnoreRule {
  std::string suffix;  // matched against the normalised name's end
  std::string reason;  // "the drafter borrows the target's embed_tokens"
};

}  // namespace dflash::weights
