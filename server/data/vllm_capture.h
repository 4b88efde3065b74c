// File: vllm_capture.h
// vLLM / speculators per-sample captures, hs_{i}.safetensors:
//   hidden_states [seq, layers, H]  the captured layers, in the order the
//                                   manifest lists them (vLLM capture ids)
//   token_ids     [seq]
// and no loss mask: the manifest's "prompt_lengths" (positions >= P are
// responses) or "loss_mask": "all-positions" says which positions count.
// FP8 captures (F8 dtypes or *scale tensors) are refused: this service does
// not dequantize them. Internal to data/sample_reader.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/host_sample.h"

namespace dflash::data {

// "hs_<i>.safetensors".
bool IsVllmCaptureName(absl::string_view file_name);

// One capture as a HostSample: features [seq, layers * H] (one group), the
// loss mask built from expect.responses. InvalidArgument names the defect.
absl::StatusOr<HostSample> ReadVllmCapture(const std::string& path,
                                           const SampleExpectations& expect);

}  // namespace dflash::data
