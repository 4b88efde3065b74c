// File: host_sample.h
// One capture file's contents as read (HostSample) and what the dataset
// expects of it (SampleExpectations): shared by the capture readers
// (sample_reader for torch.save dicts, vllm_capture for vLLM's
// safetensors), which dispatch to each other, so neither includes the other
// for these types. Internal to data/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/mapped_file.h"
#include "data/dataset_manifest.h"
#include "data/feature_group.h"

namespace dflash::data {

struct SampleExpectations {
  std::vector<FeatureGroup> groups;
  // Hidden size per layer; 0 = derive it from this sample's widths.
  int64_t hidden_size = 0;
  bool hidden_size_from_manifest = false;
  int64_t vocab_size = 0;  // > 0: token ids must be below it
  // Feature dtype every group must have; nullopt = take this sample's.
  c10::optional<c10::ScalarType> feature_dtype;
  // A key holding the target's final hidden state [L, H] outside the
  // feature groups (empty: none, or it is a feature group's own key).
  std::string final_hidden_key;
  // For captures without a loss mask (data/vllm_capture.h).
  ResponsePositions responses;
};

struct HostSample {
  at::Tensor input_ids;              // [L] int64
  at::Tensor loss_mask;              // [L] uint8
  std::vector<at::Tensor> features;  // [L, W_g], stored dtype
  // Per feature: the file whose mapping it is a view of (nullopt: owned).
  std::vector<std::optional<FileStamp>> feature_files;
  at::Tensor final_hidden;  // [L, H] when final_hidden_key is set
  int64_t hidden_size = 0;
  bool mask_from_manifest = false;  // built from expect.responses (no mask in the file)
};

}  // namespace dflash::data
