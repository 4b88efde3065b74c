// File: sample_reader.h
// Reads one capture file (a torch.save dict) into validated host tensors:
// input_ids [L] int64, loss_mask [L] uint8 and one [L, W] tensor per feature
// group. Shapes [1, L] / [1, L, W] are accepted and squeezed. Internal to
// EvalDataset::Load.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "data/host_sample.h"

namespace dflash::data {

// Errors are InvalidArgument (or NotFound/InvalidArgument from the file
// reader) whose message names the defect but not the file: the caller adds it.
absl::StatusOr<HostSample> ReadSample(const std::string& path, const SampleExpectations& expect);

}  // namespace dflash::data
