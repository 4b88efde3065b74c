#include "data/vllm_capture.h"

#include <ATen/ATen.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "data/sample_files.h"
#include "weights/safetensors_file.h"

namespace dflash::data {
namespace {

// Opens the file, refusing FP8 captures by name.
absl::StatusOr<weights::TensorSourcePtr> OpenCapture(const std::string& path) {
  absl::StatusOr<weights::TensorSourcePtr> src = weights::OpenSafetensors(path);
  if (!src.ok() && absl::StrContains(src.status().message(), "'F8_")) {
    return absl::InvalidArgumentError(
        absl::StrCat("an FP8 capture (", src.status().message(),
                     "): this service does not dequantize FP8 hidden states; capture "
                     "in bf16 or fp32"));
  }
  if (!src.ok()) return src.status();
  for (const std::string& name : (*src)->names()) {
    if (absl::StrContains(name, "scale")) {
      return absl::InvalidArgumentError(
          absl::StrCat("holds '", name,
                       "': an FP8 capture with scales; this service does not dequantize "
                       "FP8 hidden states; capture in bf16 or fp32"));
    }
  }
  return src;
}

// Positions >= the sample's prompt length, or all of them.
absl::StatusOr<at::Tensor> ResponseMask(const ResponsePositions& r, const std::string& file,
                                        int64_t length) {
  if (r.all_positions) return at::ones({length}, at::kByte);
  if (r.prompt_lengths.empty()) {
    return absl::InvalidArgumentError(
        "records no loss mask; declare where responses start in dataset.json: "
        "\"prompt_lengths\": [P per sample index] or \"loss_mask\": \"all-positions\"");
  }
  const int64_t index = FileNameIndex(file);
  if (index < 0 || index >= static_cast<int64_t>(r.prompt_lengths.size())) {
    return absl::InvalidArgumentError(absl::StrCat("has sample index ", index,
                                                   " but dataset.json 'prompt_lengths' has ",
                                                   r.prompt_lengths.size(), " entries"));
  }
  const int64_t p = r.prompt_lengths[index];
  if (p >= length) {
    return absl::InvalidArgumentError(absl::StrCat("has ", length,
                                                   " tokens but dataset.json 'prompt_lengths[",
                                                   index, "]' is ", p, ": no response position"));
  }
  at::Tensor mask = at::zeros({length}, at::kByte);
  mask.narrow(0, p, length - p).fill_(1);
  return mask;
}

absl::StatusOr<at::Tensor> TokenIds(const weights::TensorSource& src, int64_t vocab_size) {
  const char* key = src.Find("token_ids") != nullptr ? "token_ids" : "input_ids";
  if (src.Find(key) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor 'token_ids' is missing; the file holds [", absl::StrJoin(src.names(), ", "), "]"));
  }
  ASSIGN_OR_RETURN(at::Tensor ids, src.Read(key));
  if (ids.dim() == 2 && ids.size(0) == 1) ids = ids[0];
  if (ids.dim() != 1 || ids.numel() == 0 || at::isFloatingType(ids.scalar_type())) {
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' has shape ", ShapeText(ids.sizes()),
                                                   " and dtype ", c10::toString(ids.scalar_type()),
                                                   "; expected integer ids [seq]"));
  }
  ids = ids.to(at::kLong).contiguous();
  const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
  if (lo < 0 || (vocab_size > 0 && hi >= vocab_size)) {
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' holds ids in [", lo, ", ", hi,
                                                   "]; expected [0, ", vocab_size, ")"));
  }
  return ids;
}

// hidden_states [seq, layers, H] -> [seq, layers * H], checked against the
// one declared group.
absl::StatusOr<at::Tensor> Features(const weights::TensorSource& src,
                                    const SampleExpectations& expect, int64_t length) {
  if (expect.groups.size() != 1 || expect.groups[0].key != "hidden_states") {
    return absl::InvalidArgumentError(
        "a vLLM capture holds one feature, 'hidden_states' [seq, layers, H]; declare "
        "\"features\": {\"hidden_states\": [capture ids]} in dataset.json");
  }
  if (src.Find("hidden_states") == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor 'hidden_states' is missing; the file holds [",
                     absl::StrJoin(src.names(), ", "), "]"));
  }
  ASSIGN_OR_RETURN(at::Tensor h, src.Read("hidden_states"));
  const size_t layers = expect.groups[0].layer_ids.size();
  if (h.dim() != 3 || h.size(0) != length || h.size(1) != static_cast<int64_t>(layers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'hidden_states' has shape ", ShapeText(h.sizes()), "; expected [", length,
                     ", ", layers, ", H] (", length, " tokens, ", layers, " declared layers)"));
  }
  if (expect.hidden_size > 0 && h.size(2) != expect.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat("'hidden_states' has hidden size ", h.size(2),
                                                   "; expected ", expect.hidden_size));
  }
  if (expect.feature_dtype.has_value() && h.scalar_type() != *expect.feature_dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("'hidden_states' has dtype ", c10::toString(h.scalar_type()),
                     "; the dataset's first sample has ", c10::toString(*expect.feature_dtype)));
  }
  return h.reshape({length, -1}).contiguous();
}

}  // namespace

bool IsVllmCaptureName(absl::string_view file_name) {
  return absl::StartsWith(file_name, "hs_") && absl::EndsWith(file_name, ".safetensors");
}

absl::StatusOr<HostSample> ReadVllmCapture(const std::string& path,
                                           const SampleExpectations& expect) {
  ASSIGN_OR_RETURN(weights::TensorSourcePtr src, OpenCapture(path));
  HostSample out;
  ASSIGN_OR_RETURN(out.input_ids, TokenIds(*src, expect.vocab_size));
  const int64_t length = out.input_ids.numel();
  if (src->Find("loss_mask") != nullptr) {
    return absl::InvalidArgumentError(
        "holds a 'loss_mask' tensor, which vLLM captures do not record; for hs_{i}.safetensors "
        "the responses come from dataset.json (\"prompt_lengths\" or \"loss_mask\": "
        "\"all-positions\") only");
  }
  ASSIGN_OR_RETURN(out.loss_mask,
                   ResponseMask(expect.responses, path.substr(path.rfind('/') + 1), length));
  out.mask_from_manifest = true;
  ASSIGN_OR_RETURN(at::Tensor f, Features(*src, expect, length));
  out.hidden_size = f.size(1) / static_cast<int64_t>(expect.groups[0].layer_ids.size());
  out.features.push_back(std::move(f));
  return out;
}

}  // namespace dflash::data
