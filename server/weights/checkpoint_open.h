// File: checkpoint_open.h
// One call that opens any drafter checkpoint: a directory with config.json
// plus model.safetensors / a sharded index / a .pt file, or a single weights
// file with config.json beside it (or given explicitly). The format is
// detected from the path and the file's magic bytes, never from a flag.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "weights/tensor_source.h"

namespace dflash::weights {

struct OpenedCheckpoint {
  TensorSourcePtr source;
  std::string config_path;  // config.json that describes it
};

// config_path may be empty (then looked up beside the weights).
absl::StatusOr<OpenedCheckpoint> OpenCheckpoint(const std::string& path,
                                                const std::string& config_path);

}  // namespace dflash::weights
