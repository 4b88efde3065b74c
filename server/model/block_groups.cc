#include "model/block_groups.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"

namespace dflash::model {
namespace {

// In-block key mask of one rule: [nbm, 1, 1, B, B] (true = masked; nbm = nb
// with lengths, else 1), or undefined when nothing is masked.
at::Tensor BlockMask(const AttentionRule& rule, const at::Tensor& lengths, int64_t B,
                     const at::TensorOptions& lopt) {
  const at::Tensor i = at::arange(B, lopt).unsqueeze(1);  // query slot
  const at::Tensor j = at::arange(B, lopt).unsqueeze(0);  // key slot
  at::Tensor m = at::zeros({B, B}, lopt.dtype(at::kBool));
  if (rule.causal) m = m | (j > i);
  if (rule.window > 0 && rule.window_in_block) {
    m = m | ((i - j) >= rule.window);
    if (rule.two_sided) m = m | ((j - i) >= rule.window);
  }
  if (lengths.defined()) {
    const at::Tensor len = lengths.view({-1, 1, 1});
    m = m.unsqueeze(0) | ((j.unsqueeze(0) >= len) & (i.unsqueeze(0) < len));
    return m.view({-1, 1, 1, B, B});
  }
  if (!m.any().item<bool>()) return at::Tensor();
  return m.view({1, 1, 1, B, B});
}

// A shared sequence's context masks; a: [ng] its blocks' anchors (device).
// A windowed layer reads keys [min_anchor - W + 1, lc): a query at a + j sees
// key k when a + j - k < W, so a block reads (a - W, a).
void SetContextMasks(Group& grp, const at::Tensor& a, const MaskInputs& m, int64_t min_anchor) {
  const int64_t B = m.slots.size(0);
  at::Tensor key = at::arange(grp.lc, m.lopt);  // [lc]
  at::Tensor full = (key.view({1, 1, -1}) >= a.view({-1, 1, 1})).expand({grp.ng, B, grp.lc});
  grp.full_mask = full.reshape({grp.ng, 1, 1, B, grp.lc});
  if (m.window > 0) {
    grp.win_lo = std::max<int64_t>(0, min_anchor - (m.window - 1));
    grp.win_lc = grp.lc - grp.win_lo;
    const at::Tensor wkey = at::arange(grp.win_lo, grp.lc, m.lopt).view({1, 1, -1});
    const at::Tensor p = (a.unsqueeze(1) + m.slots).unsqueeze(2);  // [ng, B, 1]
    const at::Tensor hidden = (wkey >= a.view({-1, 1, 1})) | ((p - wkey) >= m.window);
    grp.slide_mask = hidden.expand({grp.ng, B, grp.win_lc}).reshape({grp.ng, 1, 1, B, grp.win_lc});
  }
}

bool SameRule(const AttentionRule& a, const AttentionRule& b) {
  return a.causal == b.causal && a.window == b.window && a.window_in_block == b.window_in_block &&
         a.two_sided == b.two_sided;
}

}  // namespace

// Reads anchors, seq and (when defined) lengths to the host and checks each
// block: 1 <= length <= B, a sequence the context holds, an anchor within it.
absl::StatusOr<HostBlocks> ReadBlocks(const at::Tensor& anchors, const at::Tensor& seq,
                                      const at::Tensor& lengths, int64_t B,
                                      const ContextCache& context) {
  const int64_t nb = anchors.size(0);
  const int64_t S = static_cast<int64_t>(context.lengths.size());
  HostBlocks host;
  ASSIGN_OR_RETURN(auto read, TorchGuard("reading block anchors", [&] {
                     return std::make_pair(anchors.to(at::kCPU, at::kLong).contiguous(),
                                           seq.to(at::kCPU, at::kLong).contiguous());
                   }));
  host.anchors = std::move(read.first);
  host.seq = std::move(read.second);
  if (lengths.defined()) {
    ASSIGN_OR_RETURN(at::Tensor len, TorchGuard("reading block lengths", [&] {
                       return lengths.to(at::kCPU, at::kLong).contiguous();
                     }));
    const int64_t* l_ptr = len.data_ptr<int64_t>();
    for (int64_t b = 0; b < nb; ++b) {
      if (l_ptr[b] < 1 || l_ptr[b] > B) {
        return absl::InvalidArgumentError(
            absl::StrCat("block ", b, " has length ", l_ptr[b], "; expected 1..", B));
      }
    }
  }
  const int64_t* a_ptr = host.anchors.data_ptr<int64_t>();
  const int64_t* s_ptr = host.seq.data_ptr<int64_t>();
  for (int64_t b = 0; b < nb; ++b) {
    if (s_ptr[b] < 0 || s_ptr[b] >= S) {
      return absl::InvalidArgumentError(absl::StrCat("block ", b, " reads sequence ", s_ptr[b],
                                                     "; the context holds ", S, " sequences"));
    }
    if (a_ptr[b] < 0 || a_ptr[b] > context.lengths[s_ptr[b]]) {
      return absl::InvalidArgumentError(
          absl::StrCat("block ", b, " has anchor ", a_ptr[b], "; sequence ", s_ptr[b], " has ",
                       context.lengths[s_ptr[b]], " context positions"));
    }
    if (!context.first_anchor.empty() && a_ptr[b] < context.first_anchor[s_ptr[b]]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block ", b, " has anchor ", a_ptr[b], "; sequence ", s_ptr[b],
          "'s context was encoded for anchors from ", context.first_anchor[s_ptr[b]], " on"));
    }
    host.by_seq[s_ptr[b]].push_back(b);
  }
  return host;
}

// One group of all blocks when each reads its own sequence (replay: they
// attend one by one, masks built per block), else one group per sequence;
// a_dev: [nb] anchors on the blocks' device.
std::vector<Group> MakeGroups(const HostBlocks& host, const at::Tensor& a_dev,
                              const MaskInputs& m) {
  const int64_t nb = host.anchors.size(0);
  const int64_t* a_ptr = host.anchors.data_ptr<int64_t>();
  std::vector<Group> groups;
  if (static_cast<int64_t>(host.by_seq.size()) == nb) {
    Group grp;
    grp.ng = nb;
    groups.push_back(std::move(grp));
    return groups;
  }
  for (const auto& [s, blocks] : host.by_seq) {
    Group grp;
    grp.ng = static_cast<int64_t>(blocks.size());
    grp.seq = s;
    grp.idx = at::tensor(blocks, at::kLong).to(a_dev.device());
    int64_t min_anchor = a_ptr[blocks[0]];
    for (int64_t b : blocks) {
      grp.lc = std::max(grp.lc, a_ptr[b]);
      min_anchor = std::min(min_anchor, a_ptr[b]);
    }
    SetContextMasks(grp, a_dev.index_select(0, grp.idx), m, min_anchor);
    groups.push_back(std::move(grp));
  }
  return groups;
}

// In-block masks per layer, built once per distinct rule.
std::vector<at::Tensor> BlockMasks(const std::vector<AttentionRule>& rules,
                                   const at::Tensor& lengths, int64_t B,
                                   const at::TensorOptions& lopt) {
  std::vector<at::Tensor> blk_masks(rules.size());
  for (size_t li = 0; li < rules.size(); ++li) {
    size_t same = 0;
    while (same < li && !SameRule(rules[same], rules[li])) ++same;
    blk_masks[li] = same < li ? blk_masks[same] : BlockMask(rules[li], lengths, B, lopt);
  }
  return blk_masks;
}

// The window's mask over the W - 1 keys before an anchor, [B, W - 1] bool
// (true = masked): column c is key a - (W - 1) + c, which slot j sees when
// a + j - key < W, i.e. c >= j. A block with n < W - 1 keys before its
// anchor uses the last n columns.
at::Tensor WindowPattern(int64_t window, const at::Tensor& slots) {
  const at::Tensor c = at::arange(window - 1, slots.options()).view({1, -1});
  return c < slots.view({-1, 1});
}

}  // namespace dflash::model
