#include "config/drafter_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::config {

const char* FamilyName(DrafterFamily f) {
  return f == DrafterFamily::kDFlash2 ? "DFlash 2" : "DFlash 1";
}

std::vector<std::string> DescribeDraftKeys(const DrafterConfig& c) {
  std::vector<std::string> out;
  if (c.layout != "z-lab") {
    out.push_back(absl::StrCat("layout ", c.layout, ", read as z-lab's:"));
    for (const std::string& n : c.layout_notes) out.push_back(absl::StrCat("  ", n));
  }
  out.push_back(absl::StrCat("family ", FamilyName(c.family), " (",
                             c.is_dflash2() ? "DFlash2DraftModel" : "DFlashDraftModel", ")"));
  for (const DraftKey& k : c.draft_keys) {
    out.push_back(absl::StrCat("draft key ", k.key, " = ", k.value, " (", k.source, ")"));
  }
  // Attention per layer under the default semantics (zlab-current).
  std::vector<std::string> layers;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const bool sliding = c.sliding[i];
    const bool causal = c.is_causal.has_value() ? *c.is_causal : sliding;
    const bool window = sliding && c.sliding_window > 0;
    layers.push_back(absl::StrCat(i, " ", sliding ? "sliding" : "full",
                                  window ? absl::StrCat(" W=", c.sliding_window) : "",
                                  causal ? " causal" : " bidirectional"));
  }
  out.push_back(absl::StrCat(
      "attention inside the block (zlab-current): ", absl::StrJoin(layers, "; "),
      c.is_causal.has_value() ? absl::StrCat(" (is_causal ", *c.is_causal ? "true" : "false", ")")
                              : " (is_causal absent: sliding layers causal)",
      c.use_sliding_window ? "" : "; use_sliding_window false: no window"));
  if (!c.skipped_keys.empty()) {
    out.push_back(absl::StrCat("keys known not to change the computation, not used: ",
                               absl::StrJoin(c.skipped_keys, ", ")));
  }
  return out;
}

std::string DescribeConfig(const DrafterConfig& c) {
  int64_t n_sliding = 0;
  for (bool s : c.sliding) n_sliding += s ? 1 : 0;
  const int64_t n_full = c.num_hidden_layers - n_sliding;
  std::string layers = n_sliding > 0 ? absl::StrCat(n_sliding, " sliding W=", c.sliding_window,
                                                    ", ", n_full, " full")
                                     : absl::StrCat(n_full, " full");
  std::string out = absl::StrCat(
      FamilyName(c.family), ", ", c.num_hidden_layers, " layers (", layers, "), H=", c.hidden_size,
      ", ", c.num_attention_heads, "/", c.num_key_value_heads, " heads x ", c.head_dim,
      ", I=", c.intermediate_size, ", B=", c.block_size, ", target layers [",
      absl::StrJoin(c.target_layer_ids, ", "), "]", ", mask ", c.mask_token_id);
  if (c.is_dflash2()) {
    absl::StrAppend(&out, ", conv K=", c.conv_kernel_size, " gs=", c.conv_group_size,
                    ", selector r=", c.selector_rank, " k=", c.selector_top_k);
  }
  if (c.input_embedding_scale != 1.0) {
    absl::StrAppend(&out, ", input scale ", c.input_embedding_scale);
  }
  if (c.output_multiplier != 1.0) absl::StrAppend(&out, ", output x", c.output_multiplier);
  if (c.final_logit_softcapping > 0) {
    absl::StrAppend(&out, ", softcap ", c.final_logit_softcapping);
  }
  if (c.rope.type != "default") {
    absl::StrAppend(&out, ", rope ", c.rope.type, " x", c.rope.factor);
  }
  return out;
}

}  // namespace dflash::config
