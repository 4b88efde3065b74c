// File: eval_dataset.h
// A resident dataset of cached target hidden states (SpecForge offline
// capture files, dflash-semantics §3): per sample the token ids, the loss
// mask and one or more feature tensors, each holding a declared list of
// target layers. Kept on the server's device in the stored dtype.
//
// The manifest (dataset.json in the directory) declares the layers:
//   {"name": "gsm8k-qwen3", "hidden_size": 5120,
//    "features": {"hidden_states": [1, 16, 31, 46, 61]}}
// or for the EAGLE-3 layout:
//    "features": {"aux_hidden_state": [1, 16, 31, 46], "hidden_state": [61]}
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/dataset_manifest.h"
#include "data/feature_group.h"
#include "data/sample_metadata.h"
#include "weights/map_policy.h"

namespace dflash::data {

struct DatasetSample {
  int64_t index = 0;                 // from the file name (data_17.ckpt -> 17)
  std::string file;                  // relative to the dataset root
  at::Tensor input_ids;              // [L] int64
  at::Tensor loss_mask;              // [L] uint8 (0/1)
  std::vector<at::Tensor> features;  // per group: [L, k_g * H_t]
  // [L, H_t] the target's final hidden state when the dataset declares one
  // (a view of its feature group when the key is one), else undefined.
  at::Tensor final_hidden;
  SampleMetadata metadata;  // empty fields when the dataset has none
};

struct DatasetLoadOptions {
  std::string name;
  std::string path;
  // Overrides / replaces the manifest: feature key -> layer ids.
  std::map<std::string, std::vector<int>> layer_ids;
  c10::optional<c10::ScalarType> dtype;  // default: as stored
  c10::Device device = c10::Device(c10::kCPU);
  int64_t max_samples = 0;  // 0 = all
  bool skip_bad_samples = false;
  int64_t vocab_size = 0;  // when > 0, token ids are checked against it
  // Features stored in the resident dtype stay views of their capture file
  // where it allows (weights/map_policy.h; on the CPU only).
  weights::MapPolicy map;
  // Kept on disk (issue 30): every sample is read once (validated,
  // fingerprinted, then dropped); evaluations read it again in chunks
  // (Part). Nothing of it stays resident.
  bool stream = false;
  // The most a streamed dataset's chunks in memory may take at once
  // (an evaluation's chunks and their read-ahead); 0: 256 MiB.
  int64_t stream_budget_bytes = 0;
};

class EvalDataset {
 public:
  // Reads every capture file below options.path (*.ckpt, *.pt, *.pth,
  // *.ckpt.gz; order and sample indices: data/sample_files.h), keeps the
  // first max_samples of that order, validates each sample and moves it to
  // the device before reading the next. Errors:
  //   NotFound: path is not a directory, or it holds no capture file.
  //   FailedPrecondition: no layer ids declared (neither request nor
  //     dataset.json); the message shows an example manifest.
  //   InvalidArgument: a bad manifest / layer_ids, or a bad sample, named as
  //     "sample '<relative path>': <defect>" (skip_bad_samples skips those and
  //     lists "<relative path>: <defect>" in skipped(); if every sample is
  //     bad the load still fails with InvalidArgument).
  // Layer ids: options.layer_ids replaces the manifest's features (its other
  // fields stand; a manifest that does not parse is still an error).
  // Per-sample metadata: data/sample_metadata.h. The hidden
  // size is the manifest's, else derived from the first good sample
  // (width / layers). Without options.dtype every feature must share the
  // first sample's stored dtype. fingerprint() = "h64:<16 hex>" over the
  // layer groups, hidden size and, per sample in order, the resident
  // ids / mask / feature bytes (weights/fingerprint.h's byte hash): equal content gives an
  // equal fingerprint whatever the file names, format or device.
  static absl::StatusOr<EvalDataset> Load(const DatasetLoadOptions& options);

  // A dataset holding samples [begin, end) of this one on `device`, with its
  // groups, hidden size and fingerprint. Resident: views of the same tensors
  // (copies on another device). Streamed: read from disk again, each sample
  // checked against the hash it had when the dataset was loaded:
  // NotFound naming the file when it is gone, FailedPrecondition when it
  // changed. InvalidArgument for a bad range.
  absl::StatusOr<EvalDataset> Part(size_t begin, size_t end, c10::Device device) const;

  // Kept on disk: size() counts its samples but sample() and Features()
  // hold nothing; evaluate Part()s of it.
  bool streamed() const { return streamed_; }
  int64_t stream_budget_bytes() const {
    return load_.stream_budget_bytes > 0 ? load_.stream_budget_bytes : int64_t{256} << 20;
  }
  // A sample's tokens and resident bytes, resident or streamed.
  int64_t sample_tokens(size_t i) const;
  int64_t sample_bytes(size_t i) const;
  // The bytes its samples take when resident (bytes() for a resident one).
  int64_t total_sample_bytes() const;

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const std::vector<FeatureGroup>& groups() const { return groups_; }
  // Every layer held, in group then column order.
  std::vector<int> layer_ids() const;
  int64_t hidden_size() const { return hidden_size_; }
  size_t size() const { return streamed_ ? stream_.size() : samples_.size(); }
  const DatasetSample& sample(size_t i) const { return samples_[i]; }
  c10::ScalarType dtype() const { return dtype_; }
  int64_t bytes() const { return bytes_; }
  // Which feature bytes are views of their capture files, and those files.
  const weights::MapTally& mapping() const { return mapping_; }
  const std::string& fingerprint() const { return fingerprint_; }
  // The manifest's final_hidden_state declaration, when it has one.
  const std::optional<FinalHiddenSpec>& final_hidden() const { return final_hidden_; }
  // Samples skipped under skip_bad_samples, one line each (file: reason).
  const std::vector<std::string>& skipped() const { return skipped_; }
  // "" for hf-layer ids and masks read from the files; else how the ids were
  // declared (both numberings) and where the responses came from, for ls.
  std::string capture_notes() const;

  // FailedPrecondition "drafter needs layer 61; dataset holds [1, 16, 31, 46]"
  // when a wanted layer is absent.
  absl::Status CheckLayers(const std::vector<int>& wanted) const;

  // [L, K*H_t]: the columns of `wanted` layers, in that order (a narrow()
  // view when they are consecutive columns of one group, else one cat of
  // narrowed slices). FailedPrecondition as CheckLayers; InvalidArgument for
  // i out of range or an empty `wanted`.
  absl::StatusOr<at::Tensor> Features(size_t i, const std::vector<int>& wanted) const;

 private:
  // What a streamed dataset keeps of each sample: where it is, its size and
  // the fingerprint state after hashing it (the state before is the entry
  // before's, or hash_start_).
  struct StreamedSample {
    int64_t index = 0;
    std::string file;  // relative to the dataset root
    int64_t tokens = 0, bytes = 0;
    uint64_t hash_after = 0;
    SampleMetadata metadata;
  };
  // How the samples were read, to read them again the same way.
  DatasetLoadOptions load_;
  bool streamed_ = false;
  std::vector<StreamedSample> stream_;
  uint64_t hash_start_ = 0;
  int final_group_ = -1;  // the feature group that is the final hidden state

  std::string name_, path_, fingerprint_;
  std::vector<FeatureGroup> groups_;
  std::optional<FinalHiddenSpec> final_hidden_;
  int64_t hidden_size_ = 0;
  c10::ScalarType dtype_ = c10::kFloat;
  int64_t bytes_ = 0;
  weights::MapTally mapping_;
  std::vector<DatasetSample> samples_;
  std::vector<std::string> skipped_;
  LayerNumbering numbering_ = LayerNumbering::kHfLayer;
  ResponsePositions responses_;
  int64_t masks_from_manifest_ = 0;  // samples whose loss mask came from responses_
};

}  // namespace dflash::data
