// File: eval_dataset.cc
// Load: list and order the capture files, read each one, validate it, convert
// it to the resident dtype, hash it, move it to the device and drop the host
// copy before reading the next (never two full copies of the dataset).
#include "data/eval_dataset.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "data/dataset_manifest.h"
#include "data/layer_numbering.h"
#include "data/sample_files.h"
#include "data/sample_metadata.h"
#include "data/sample_reader.h"
#include "weights/fingerprint.h"

namespace dflash::data {
namespace {

namespace fs = std::filesystem;

struct Declared {
  std::string name;
  int64_t hidden_size = 0;
  std::vector<FeatureGroup> groups;
  std::optional<FinalHiddenSpec> final_hidden;
  ResponsePositions responses;
  LayerNumbering numbering = LayerNumbering::kHfLayer;
  std::string sample_metadata;  // the manifest's file name; empty = the default
};

absl::StatusOr<Declared> DeclaredLayers(const DatasetLoadOptions& options) {
  Declared d;
  const fs::path manifest = fs::path(options.path) / kManifestFile;
  std::error_code ec;
  const bool has_manifest = fs::is_regular_file(manifest, ec);
  if (!has_manifest && options.layer_ids.empty()) {
    return absl::FailedPreconditionError(MissingManifestMessage(options.path));
  }
  std::vector<LayerGroup> groups;
  if (has_manifest) {
    std::ifstream in(manifest, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read manifest '", manifest.string(), "'"));
    }
    absl::StatusOr<DatasetManifest> m = ParseManifest(text.str(), manifest.string());
    if (!m.ok() && !options.layer_ids.empty()) {
      return absl::Status(m.status().code(),
                          absl::StrCat(m.status().message(),
                                       " (the request's layer_ids replace only the manifest's "
                                       "features; its other fields are still read)"));
    }
    if (!m.ok()) return m.status();
    d.name = m->name;
    d.hidden_size = m->hidden_size;
    d.final_hidden = m->final_hidden;
    d.responses = m->responses;
    d.numbering = m->numbering;
    d.sample_metadata = m->sample_metadata;
    groups = std::move(m->features);
  }
  if (!options.layer_ids.empty()) {
    // The request names the feature groups (in hf-layer ids); the manifest's
    // other declarations (final hidden state, responses, metadata) stand.
    ASSIGN_OR_RETURN(groups, CheckLayerGroups(options.layer_ids, "request layer_ids"));
    d.numbering = LayerNumbering::kHfLayer;
  }
  for (auto& [key, ids] : groups) d.groups.push_back({key, ids});
  return d;
}

// The dataset's fingerprint: weights' byte hash chained over everything the
// dataset holds, in order (one hash implementation for weights and data).
class DatasetHash {
 public:
  DatasetHash() = default;
  explicit DatasetHash(uint64_t state) : state_(state) {}
  uint64_t state() const { return state_; }
  void Update(const void* data, size_t size) { state_ = weights::HashBytes64(data, size, state_); }
  void UpdateU64(uint64_t v) { Update(&v, sizeof(v)); }
  std::string Hex() const { return absl::StrFormat("h64:%016x", state_); }

 private:
  uint64_t state_ = 0x9e3779b97f4a7c15ull;
};

void HashTensor(DatasetHash& h, const at::Tensor& t) {
  h.UpdateU64(static_cast<uint64_t>(t.scalar_type()));
  h.UpdateU64(static_cast<uint64_t>(t.numel()));
  h.Update(t.data_ptr(), t.numel() * t.element_size());
}

// What a sample holds resident: ids, mask, features and a final hidden
// state of its own key.
int64_t SampleBytes(const DatasetSample& sample) {
  int64_t bytes = sample.input_ids.nbytes() + sample.loss_mask.nbytes();
  for (const at::Tensor& f : sample.features) bytes += f.nbytes();
  if (sample.final_hidden.defined()) bytes += sample.final_hidden.nbytes();
  return bytes;
}

std::string LayerList(const std::vector<int>& ids) {
  return absl::StrCat("[", absl::StrJoin(ids, ", "), "]");
}

// The dataset's name: the request's, else the manifest's, else the folder's.
std::string DatasetName(const DatasetLoadOptions& options, const Declared& declared) {
  std::string name = !options.name.empty()    ? options.name
                     : !declared.name.empty() ? declared.name
                                              : fs::path(options.path).filename().string();
  if (name.empty()) {  // a path ending in '/'
    name = fs::path(options.path).parent_path().filename().string();
  }
  return name;
}

// The start of the fingerprint: its version, the feature groups, then the
// final hidden state's key (absent: fingerprints as before it existed).
DatasetHash HashGroups(const std::vector<FeatureGroup>& groups,
                       const std::optional<FinalHiddenSpec>& final_hidden) {
  DatasetHash hash;
  hash.Update("dflash-dataset-v1", 17);
  for (const FeatureGroup& g : groups) {
    hash.Update(g.key.data(), g.key.size());
    hash.UpdateU64(g.layer_ids.size());
    for (int id : g.layer_ids) hash.UpdateU64(static_cast<uint64_t>(id));
  }
  if (final_hidden.has_value()) {
    hash.Update(final_hidden->key.data(), final_hidden->key.size());
    hash.UpdateU64(final_hidden->norm_applied ? 1 : 0);
  }
  return hash;
}

// Hashes `host` (on the host, before any move) and copies it to `device`,
// features as `dtype`, dropping each host feature once it is copied.
absl::StatusOr<DatasetSample> MoveSample(HostSample& host, const SampleFile& file,
                                         c10::ScalarType dtype, const c10::Device& device,
                                         const weights::MapPolicy& policy, DatasetHash& hash,
                                         weights::MapTally& tally) {
  DatasetSample sample;
  sample.index = file.index;
  sample.file = file.relative;
  return TorchGuard(
      absl::StrCat("moving sample '", file.relative, "' to ", device.str()),
      [&]() -> DatasetSample {
        hash.UpdateU64(static_cast<uint64_t>(host.input_ids.size(0)));
        HashTensor(hash, host.input_ids);
        HashTensor(hash, host.loss_mask);
        sample.input_ids = host.input_ids.to(device, at::kLong, false, /*copy=*/true);
        sample.loss_mask = host.loss_mask.to(device, at::kByte, false, /*copy=*/true);
        if (host.final_hidden.defined()) {  // a key of its own: hashed and moved like a feature
          at::Tensor host_cast = host.final_hidden.to(dtype).contiguous();
          HashTensor(hash, host_cast);
          sample.final_hidden = host_cast.to(device, dtype, false, /*copy=*/true);
          host.final_hidden = at::Tensor();
        }
        for (size_t i = 0; i < host.features.size(); ++i) {
          at::Tensor& f = host.features[i];
          const std::optional<FileStamp> file =
              i < host.feature_files.size() ? host.feature_files[i] : std::nullopt;
          if (policy.enabled && device.is_cpu() && f.scalar_type() == dtype && file.has_value() &&
              file->AgeSeconds() >= policy.min_age_seconds) {
            // Stored as it stays resident: a view of the capture file
            // (weights/map_policy.h says what keeps that safe).
            HashTensor(hash, f);
            tally.AddMapped(*file, static_cast<int64_t>(f.nbytes()));
            sample.features.push_back(f);
            continue;
          }
          // Owned memory otherwise: a view of a file younger than the
          // policy's age could be rewritten in place (SIGBUS).
          at::Tensor host_cast = f.to(dtype).contiguous();
          HashTensor(hash, host_cast);  // on the host, before any move
          sample.features.push_back(host_cast.to(device, dtype, false, /*copy=*/true));
          tally.AddCopied(static_cast<int64_t>(sample.features.back().nbytes()));
          f = at::Tensor();  // drop the host copy now
        }
        return std::move(sample);
      });
}

// The feature group whose columns are the final hidden state, or -1 (none
// declared, or a key of its own).
int FinalHiddenGroup(const Declared& declared) {
  int final_group = -1;
  if (declared.final_hidden.has_value()) {
    for (size_t g = 0; g < declared.groups.size(); ++g) {
      if (declared.groups[g].key == declared.final_hidden->key) final_group = static_cast<int>(g);
    }
  }
  return final_group;
}

// What every sample file must hold, from the declaration.
SampleExpectations Expectations(const Declared& declared, int64_t vocab_size, int final_group) {
  SampleExpectations expect;
  expect.groups = declared.groups;
  expect.hidden_size = declared.hidden_size;
  expect.hidden_size_from_manifest = declared.hidden_size > 0;
  expect.vocab_size = vocab_size;
  if (declared.final_hidden.has_value() && final_group < 0) {
    expect.final_hidden_key = declared.final_hidden->key;
  }
  expect.responses = declared.responses;
  return expect;
}

// What --skip-bad-samples skips: a defect of one sample's file (bad or
// missing contents), never an I/O or internal failure.
bool IsSampleDefect(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kNotFound;
}

}  // namespace

std::vector<int> EvalDataset::layer_ids() const {
  std::vector<int> out;
  for (const FeatureGroup& g : groups_) {
    out.insert(out.end(), g.layer_ids.begin(), g.layer_ids.end());
  }
  return out;
}

absl::StatusOr<EvalDataset> EvalDataset::Load(const DatasetLoadOptions& options) {
  ASSIGN_OR_RETURN(std::vector<SampleFile> files, ListSampleFiles(options.path));
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "dataset '", options.path, "' holds no capture files (*.ckpt, *.pt, *.pth, *.ckpt.gz)"));
  }
  ASSIGN_OR_RETURN(Declared declared, DeclaredLayers(options));
  if (options.max_samples > 0 && static_cast<int64_t>(files.size()) > options.max_samples) {
    files.resize(options.max_samples);
  }

  EvalDataset ds;
  ds.path_ = options.path;
  ds.groups_ = declared.groups;
  ds.name_ = DatasetName(options, declared);
  ds.final_hidden_ = declared.final_hidden;
  const int final_group = FinalHiddenGroup(declared);
  ds.numbering_ = declared.numbering;
  ds.responses_ = declared.responses;
  ASSIGN_OR_RETURN(const auto metadata, ReadSampleMetadata(options.path, declared.sample_metadata));

  SampleExpectations expect = Expectations(declared, options.vocab_size, final_group);

  DatasetHash hash = HashGroups(ds.groups_, declared.final_hidden);
  ds.load_ = options;
  ds.streamed_ = options.stream;
  ds.hash_start_ = hash.state();
  ds.final_group_ = final_group;
  // A streamed sample is hashed on the host and dropped: never a view of its
  // file (touched pages would count as resident).
  weights::MapPolicy map = options.map;
  if (options.stream) map.enabled = false;
  const c10::Device device = options.stream ? c10::Device(c10::kCPU) : options.device;
  for (const SampleFile& file : files) {
    const std::string full = (fs::path(options.path) / file.relative).string();
    absl::StatusOr<HostSample> host = ReadSample(full, expect);
    if (!host.ok()) {
      if (options.skip_bad_samples && IsSampleDefect(host.status())) {
        ds.skipped_.push_back(absl::StrCat(file.relative, ": ", host.status().message()));
        continue;
      }
      return WithContext(host.status(), "sample '", file.relative, "'");
    }
    // The first good sample fixes the hidden size and, unless a dtype is
    // requested, the stored dtype every later sample must share.
    expect.hidden_size = host->hidden_size;
    ds.masks_from_manifest_ += host->mask_from_manifest ? 1 : 0;
    if (!options.dtype.has_value() && !host->features.empty()) {
      expect.feature_dtype = host->features[0].scalar_type();
    }
    const c10::ScalarType dtype = options.dtype.value_or(
        host->features.empty() ? c10::kFloat : host->features[0].scalar_type());
    ASSIGN_OR_RETURN(DatasetSample sample,
                     MoveSample(*host, file, dtype, device, map, hash, ds.mapping_));
    host = absl::StatusOr<HostSample>(HostSample{});  // release host tensors
    const int64_t bytes = SampleBytes(sample);
    if (final_group >= 0) sample.final_hidden = sample.features[final_group];  // a view
    ds.dtype_ = dtype;
    if (auto it = metadata.find(sample.index); it != metadata.end()) sample.metadata = it->second;
    if (options.stream) {
      ds.stream_.push_back({sample.index, sample.file, sample.input_ids.numel(), bytes,
                            hash.state(), sample.metadata});
      continue;  // the sample's tensors go here
    }
    ds.bytes_ += bytes;
    ds.samples_.push_back(std::move(sample));
  }
  if (ds.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", options.path, "': all ", files.size(),
                     " samples are bad; first: ", ds.skipped_.empty() ? "" : ds.skipped_.front()));
  }
  RETURN_IF_ERROR(ds.mapping_.CheckUnchanged(), "dataset '", options.path, "'");  // not rewritten
  ds.hidden_size_ = expect.hidden_size;
  hash.UpdateU64(static_cast<uint64_t>(ds.hidden_size_));
  ds.fingerprint_ = hash.Hex();
  return ds;
}

int64_t EvalDataset::sample_tokens(size_t i) const {
  return streamed_ ? stream_[i].tokens : samples_[i].input_ids.numel();
}

int64_t EvalDataset::sample_bytes(size_t i) const {
  return streamed_ ? stream_[i].bytes : SampleBytes(samples_[i]);
}

int64_t EvalDataset::total_sample_bytes() const {
  if (!streamed_) return bytes_;
  int64_t total = 0;
  for (const StreamedSample& s : stream_) total += s.bytes;
  return total;
}

absl::StatusOr<EvalDataset> EvalDataset::Part(size_t begin, size_t end, c10::Device device) const {
  if (begin > end || end > size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample range [", begin, ", ", end, ") is outside [0, ", size(), ")"));
  }
  EvalDataset part;
  part.name_ = name_;
  part.path_ = path_;
  part.fingerprint_ = fingerprint_;
  part.groups_ = groups_;
  part.final_hidden_ = final_hidden_;
  part.hidden_size_ = hidden_size_;
  part.dtype_ = dtype_;
  part.numbering_ = numbering_;
  part.responses_ = responses_;
  part.final_group_ = final_group_;
  part.load_ = load_;
  part.load_.stream = false;
  if (!streamed_) {
    return TorchGuard(absl::StrCat("moving samples to ", device.str()), [&]() -> EvalDataset {
      for (size_t i = begin; i < end; ++i) {
        DatasetSample s = samples_[i];
        if (s.input_ids.device() != device) {
          s.input_ids = s.input_ids.to(device);
          s.loss_mask = s.loss_mask.to(device);
          for (at::Tensor& f : s.features) f = f.to(device);
          s.final_hidden = final_group_ >= 0          ? s.features[final_group_]
                           : s.final_hidden.defined() ? s.final_hidden.to(device)
                                                      : at::Tensor();
        }
        part.bytes_ += SampleBytes(s);
        part.samples_.push_back(std::move(s));
      }
      return std::move(part);
    });
  }
  // Read again exactly as Load read them, each checked against its hash.
  SampleExpectations expect;
  expect.groups = groups_;
  expect.hidden_size = hidden_size_;
  expect.hidden_size_from_manifest = true;
  expect.vocab_size = load_.vocab_size;
  if (!load_.dtype.has_value()) expect.feature_dtype = dtype_;
  if (final_hidden_.has_value() && final_group_ < 0) expect.final_hidden_key = final_hidden_->key;
  expect.responses = responses_;
  weights::MapPolicy copy;
  copy.enabled = false;
  for (size_t i = begin; i < end; ++i) {
    const StreamedSample& entry = stream_[i];
    const std::string full = (fs::path(path_) / entry.file).string();
    std::error_code ec;
    if (!fs::exists(full, ec)) {
      return absl::NotFoundError(absl::StrCat("streamed dataset '", name_, "': sample file '", full,
                                              "' is gone since the dataset was loaded"));
    }
    ASSIGN_OR_RETURN(HostSample host, ReadSample(full, expect), "streamed dataset '", name_,
                     "': sample file '", full, "'");
    DatasetHash hash(i == 0 ? hash_start_ : stream_[i - 1].hash_after);
    SampleFile file;
    file.index = entry.index;
    file.relative = entry.file;
    ASSIGN_OR_RETURN(DatasetSample sample,
                     MoveSample(host, file, dtype_, device, copy, hash, part.mapping_));
    if (hash.state() != entry.hash_after) {
      return absl::FailedPreconditionError(absl::StrCat(
          "streamed dataset '", name_, "': sample file '", full,
          "' changed since the dataset was loaded (its bytes no longer match fingerprint ",
          fingerprint_, "); load the dataset again"));
    }
    if (final_group_ >= 0) sample.final_hidden = sample.features[final_group_];
    sample.metadata = entry.metadata;
    part.bytes_ += entry.bytes;
    part.samples_.push_back(std::move(sample));
  }
  return part;
}

std::string EvalDataset::capture_notes() const {
  std::vector<std::string> notes;
  if (numbering_ != LayerNumbering::kHfLayer) {
    notes.push_back(absl::StrCat("layer ids declared as ", NumberingName(numbering_), ": ",
                                 BothNumberings(layer_ids())));
  }
  if (masks_from_manifest_ > 0) {
    notes.push_back(absl::StrCat(
        "responses of ", masks_from_manifest_, " samples (no loss mask in the files) from ",
        responses_.all_positions ? "dataset.json loss_mask all-positions: every position counts"
                                 : "dataset.json prompt_lengths: positions >= P"));
  }
  return absl::StrJoin(notes, "; ");
}

absl::Status EvalDataset::CheckLayers(const std::vector<int>& wanted) const {
  const std::vector<int> held = layer_ids();
  const std::set<int> held_set(held.begin(), held.end());
  std::vector<int> missing;
  for (int id : wanted) {
    if (!held_set.count(id) && std::find(missing.begin(), missing.end(), id) == missing.end()) {
      missing.push_back(id);
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "drafter needs ", missing.size() == 1 ? "layer " : "layers ", absl::StrJoin(missing, ", "),
      "; dataset holds ", LayerList(held), MismatchInBothNumberings(wanted, missing, held)));
}

absl::StatusOr<at::Tensor> EvalDataset::Features(size_t i, const std::vector<int>& wanted) const {
  if (i >= samples_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample ", i, " is out of range; the dataset holds ", samples_.size()));
  }
  if (wanted.empty()) return absl::InvalidArgumentError("no layers requested");
  RETURN_IF_ERROR(CheckLayers(wanted));
  // Runs of consecutive columns within one group: (group, first column, count).
  struct Run {
    size_t group;
    int64_t column, count;
  };
  std::vector<Run> runs;
  for (int id : wanted) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      const auto& ids = groups_[g].layer_ids;
      auto it = std::find(ids.begin(), ids.end(), id);
      if (it == ids.end()) continue;
      const int64_t col = it - ids.begin();
      if (!runs.empty() && runs.back().group == g &&
          runs.back().column + runs.back().count == col) {
        ++runs.back().count;
      } else {
        runs.push_back({g, col, 1});
      }
      break;
    }
  }
  const DatasetSample& s = samples_[i];
  const int64_t h = hidden_size_;
  return TorchGuard("selecting feature columns", [&]() -> at::Tensor {
    std::vector<at::Tensor> parts;
    parts.reserve(runs.size());
    for (const Run& r : runs) {
      parts.push_back(s.features[r.group].narrow(1, r.column * h, r.count * h));
    }
    return parts.size() == 1 ? parts[0] : at::cat(parts, 1);
  });
}

}  // namespace dflash::data
