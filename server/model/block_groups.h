// File: block_groups.h
// The first half of DrafterModel::ForwardBlocks (drafter_forward.cc): the
// blocks' anchors and sequences read to the host and checked, the blocks
// grouped by the sequence whose context they attend to, and the masks of
// what each block's queries may see (context keys before the anchor, a
// window, the in-block rule). Split from the attention itself, which only
// reads them.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <ATen/ATen.h>

#include "absl/status/statusor.h"
#include "model/drafter_model.h"

namespace dflash::model {

// A set of blocks attended together: the blocks of one sequence (kc/vc
// [1, nkv, lc, d]), or every block reading its own sequence (seq == -1).
struct Group {
  at::Tensor idx;  // [ng] block indices (device); undefined = all, in order
  int64_t ng = 0;
  int64_t seq = -1;      // shared sequence, or -1 for one sequence per block
  int64_t lc = 0;        // context keys needed: max anchor of the group
  at::Tensor full_mask;  // [ng, 1, 1, B, lc] bool, true = masked
  // Windowed layers read keys [win_lo, win_lo + win_lc) of the sequence.
  int64_t win_lo = 0;
  int64_t win_lc = 0;
  at::Tensor slide_mask;  // [ng, 1, 1, B, win_lc], with the window
};

// The blocks' anchors and sequences, read to the host and checked against
// the context, and the blocks of each sequence.
struct HostBlocks {
  at::Tensor anchors;  // [nb] int64, CPU
  at::Tensor seq;      // [nb] int64, CPU
  std::map<int64_t, std::vector<int64_t>> by_seq;
};

// Reads anchors, seq and (when defined) lengths to the host and checks each
// block: 1 <= length <= B, a sequence the context holds, an anchor within it.
absl::StatusOr<HostBlocks> ReadBlocks(const at::Tensor& anchors, const at::Tensor& seq,
                                      const at::Tensor& lengths, int64_t B,
                                      const ContextCache& context);

// What the groups' context masks are built from.
struct MaskInputs {
  at::TensorOptions lopt;  // int64 on the blocks' device
  at::Tensor slots;        // [B] 0..B-1
  int64_t window = 0;      // the sliding window when some layer has one, else 0
};

// One group of all blocks when each reads its own sequence (replay: they
// attend one by one, masks built per block), else one group per sequence;
// a_dev: [nb] anchors on the blocks' device.
std::vector<Group> MakeGroups(const HostBlocks& host, const at::Tensor& a_dev, const MaskInputs& m);

// In-block masks per layer, built once per distinct rule.
std::vector<at::Tensor> BlockMasks(const std::vector<AttentionRule>& rules,
                                   const at::Tensor& lengths, int64_t B,
                                   const at::TensorOptions& lopt);

// The window's mask over the W - 1 keys before an anchor, [B, W - 1] bool
// (true = masked): column c is key a - (W - 1) + c, which slot j sees when
// a + j - key < W, i.e. c >= j. A block with n < W - 1 keys before its
// anchor uses the last n columns.
at::Tensor WindowPattern(int64_t window, const at::Tensor& slots);

}  // namespace dflash::model
