#include "weights/checkpoint_open.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "weights/name_suggest.h"
#include "weights/safetensors_file.h"
#include "weights/torch_pt_file.h"

namespace dflash::weights {
namespace {

namespace fs = std::filesystem;

enum class Kind { kTorch, kSafetensors, kShardedIndex };

bool IsTorchName(const std::string& file) {
  for (absl::string_view ext : {".pt", ".pth", ".bin", ".ckpt", ".ckpt.gz"}) {
    if (absl::EndsWith(file, ext)) return true;
  }
  return false;
}

// By content: a zip ("PK\3\4"), gzip (1f 8b) or legacy pickle is
// torch.save; a .json is a shard index; anything else goes to the
// safetensors reader, whose header checks explain what is wrong with it.
absl::StatusOr<Kind> DetectKind(const std::string& path) {
  if (absl::EndsWith(path, ".json")) return Kind::kShardedIndex;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  const std::streamsize n = in.gcount();
  if (n >= 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4) {
    return Kind::kTorch;
  }
  const auto byte = [&](int i) { return static_cast<unsigned char>(magic[i]); };
  if (n >= 2 && byte(0) == 0x1f && byte(1) == 0x8b) return Kind::kTorch;
  // Legacy torch.save (pickle protocol 2 + LONG1 magic): the torch reader
  // explains how to convert it. No safetensors header is that long.
  if (n >= 4 && byte(0) == 0x80 && byte(1) == 0x02 && byte(2) == 0x8a && byte(3) == 0x0a) {
    return Kind::kTorch;
  }
  return Kind::kSafetensors;
}

absl::StatusOr<TensorSourcePtr> OpenFile(const std::string& path) {
  ASSIGN_OR_RETURN(Kind kind, DetectKind(path));
  switch (kind) {
    case Kind::kTorch: return OpenTorchPt(path);
    case Kind::kShardedIndex: return OpenShardedSafetensors(path);
    case Kind::kSafetensors: return OpenSafetensors(path);
  }
  return absl::InternalError("unreachable");
}

// The weights file of a checkpoint directory, by rank: shard index >
// model.safetensors > the only *.safetensors > the only torch file.
absl::StatusOr<std::string> WeightsInDirectory(const std::string& dir) {
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) return index.string();
  const fs::path model = fs::path(dir) / "model.safetensors";
  if (fs::exists(model)) return model.string();
  std::vector<std::string> safetensors, torch;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (absl::EndsWith(name, ".safetensors")) safetensors.push_back(name);
    if (IsTorchName(name)) torch.push_back(name);
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot list checkpoint directory '", dir, "': ", ec.message()));
  }
  std::sort(safetensors.begin(), safetensors.end());
  std::sort(torch.begin(), torch.end());
  for (const std::vector<std::string>* group : {&safetensors, &torch}) {
    if (group->size() == 1) return (fs::path(dir) / (*group)[0]).string();
    if (group->size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint directory '", dir, "' holds several weight files (", QuoteList(*group),
          ") and no model.safetensors.index.json; pass the file "
          "to use"));
    }
  }
  return absl::NotFoundError(
      absl::StrCat("checkpoint directory '", dir,
                   "' has no weights: looked for model.safetensors.index.json, model.safetensors, "
                   "*.safetensors, *.pt, *.pth, *.bin, *.ckpt"));
}

}  // namespace

absl::StatusOr<OpenedCheckpoint> OpenCheckpoint(const std::string& path,
                                                const std::string& config_path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat("checkpoint '", path, "' does not exist"));
  }
  const bool is_dir = fs::is_directory(st);
  OpenedCheckpoint out;
  if (!config_path.empty()) {
    if (!fs::is_regular_file(config_path, ec)) {
      return absl::NotFoundError(absl::StrCat("config '", config_path, "' (given for checkpoint '",
                                              path, "') does not exist"));
    }
    out.config_path = config_path;
  } else {
    const fs::path beside =
        (is_dir ? fs::path(path) : fs::path(path).parent_path()) / "config.json";
    if (!fs::is_regular_file(beside, ec)) {
      return absl::NotFoundError(absl::StrCat("checkpoint '", path, "': no config.json at '",
                                              beside.string(),
                                              "'; put it there or pass the config path"));
    }
    out.config_path = beside.string();
  }
  std::string weights = path;
  if (is_dir) {
    ASSIGN_OR_RETURN(weights, WeightsInDirectory(path));
  }
  ASSIGN_OR_RETURN(out.source, OpenFile(weights), "checkpoint '", path, "'");
  return out;
}

}  // namespace dflash::weights
