// File: target_tensors.h
// The three tensors the service needs from a target model directory:
// embed_tokens [V, H_t], lm_head [V, H_t] and the final norm [H_t], resolved
// across naming families (dflash-semantics §2) and read from their shards
// only. tie_word_embeddings (top level or text_config) lets a missing
// lm_head fall back to embed_tokens; otherwise a missing lm_head is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "weights/map_policy.h"

namespace dflash::weights {

struct TargetTensors {
  at::Tensor embed;        // [V, H_t]
  at::Tensor lm_head;      // [V, H_t] (the same storage as embed when tied)
  at::Tensor norm;         // [H_t], undefined unless asked for
  double norm_eps = 1e-6;  // rms_norm_eps (top level or text_config) when norm is loaded
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  bool tied = false;
  std::string embed_name, lm_head_name, norm_name;  // as found in the checkpoint
  std::string family;  // "qwen3", "qwen3.5-multimodal", "legacy-wrapper"
  int64_t bytes_read = 0;
  MapTally mapping;  // which tensors are views of their shards (map_policy.h)
  std::string fingerprint;
  std::vector<std::string> facts;
};

struct TargetLoadOptions {
  c10::ScalarType dtype;
  c10::Device device = c10::Device(c10::kCPU);
  bool load_norm = false;
  // Stored bytes converted at a time (chunked_copy.h); 0: its default, 16 MiB.
  int64_t chunk_bytes = 0;
  // Tensors stored in `dtype` stay views of their shard where it allows.
  MapPolicy map;
};

// NotFound when a tensor cannot be resolved: the message lists every name
// tried and the nearest names the index does hold.
absl::StatusOr<TargetTensors> LoadTargetTensors(const std::string& model_dir,
                                                const TargetLoadOptions& options);

}  // namespace dflash::weights
