// File: torch_pt_file.h
// Reader for torch.save files (zip format: .pt, .pth, .bin, .ckpt, and
// gzip-compressed .ckpt.gz). The archive is read by our own zip reader
// (zip_archive.h: sizes checked before any memory is taken) and data.pkl by
// our own restricted unpickler (pickle_reader.h): no code runs, only an
// allowlist of globals is accepted.
//
// Nested dicts are flattened with '.': {"model": {"fc.weight": T}} lists
// "model.fc.weight". Non-tensor leaves (optimizer state, step) are skipped
// and listed in skipped_entries(). The legacy (pre-1.6, non-zip) format is
// refused with a hint on how to convert it.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "weights/tensor_source.h"

namespace dflash::weights {

absl::StatusOr<TensorSourcePtr> OpenTorchPt(const std::string& path);

}  // namespace dflash::weights
