// File: sample_reader.h
// Reads one capture file (a torch.save dict) into validated host tensors:
// input_ids [L] int64, loss_mask [L] uint8 and one [L, W] tensor per feature
// group. Shapes [1, L] / [1, L, W] are accepted and squeezed. Internal to
// EvalDataset::Load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "common/mapped_file.h"
#include "data/dataset_manifest.h"
#include "data/eval_dataset.h"

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

// Errors are InvalidArgument (or NotFound/InvalidArgument from the file
// reader) whose message names the defect but not the file: the caller adds it.
absl::StatusOr<HostSample> ReadSample(const std::string& path, const SampleExpectations& expect);

}  // namespace dflash::data
