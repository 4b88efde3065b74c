#include "eval/part_ranges.h"

#include <algorithm>

#include "eval/anchors.h"
#include "eval/replay_run.h"
#include "eval/run_inputs.h"

namespace dflash::eval {
namespace {

// A range's totals before it starts: anchor mode's selected anchors,
// replay's bound on its walks.
types::EvalProgress InitialProgress(const data::EvalDataset& dataset,
                                    const types::EvalOptions& options, const SampleRange& range) {
  types::EvalProgress p;
  p.samples_total = static_cast<int64_t>(range.size());
  for (size_t i = range.begin; i < range.end; ++i) {
    const data::DatasetSample& sample = dataset.sample(i);
    const std::vector<uint8_t> mask = MaskOnHost(sample.loss_mask);
    if (options.mode == types::Mode::kAnchor) {
      p.blocks_total += static_cast<int64_t>(
          SelectAnchors(mask.data(), static_cast<int64_t>(mask.size()), options.anchors,
                        options.max_blocks, options.seed, sample.index)
              .size());
      continue;
    }
    const int64_t L = static_cast<int64_t>(mask.size());
    const int64_t P = FirstResponse(mask);
    if (P < 0) continue;
    p.blocks_total += ReplayBlocksBound(L, P, options);
  }
  p.blocks_total_is_bound = options.mode == types::Mode::kReplay && p.blocks_total > 0;
  return p;
}

// Bytes a token's context takes while its group is scored: the projected
// hidden state and each layer's keys and values, in the drafter's dtype.
int64_t ContextBytesPerToken(const model::DrafterModel& drafter) {
  const config::DrafterConfig& c = drafter.config();
  const int64_t elems =
      c.hidden_size + 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim;
  return elems * static_cast<int64_t>(c10::elementSize(drafter.dtype()));
}

}  // namespace

std::vector<SampleRange> PartRanges(const Placement& placement, const data::EvalDataset& dataset,
                                    const types::EvalOptions& options, const SampleRange& within) {
  const size_t n = within.size();
  const int64_t shards =
      options.shards > 0 ? options.shards : static_cast<int64_t>(placement.slots.size());
  std::vector<SampleRange> ranges;
  if (dataset.streamed()) {
    // Each worker holds the chunk it scores, the context K/V it is encoded
    // into and the chunk it reads ahead: the budget is shared among those.
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(shards, placement.slots.size()));
    std::vector<int64_t> bytes(n);
    int64_t total_bytes = 0, total_tokens = 0;
    for (size_t i = 0; i < n; ++i) {
      bytes[i] = dataset.sample_bytes(within.begin + i);
      total_bytes += bytes[i];
      total_tokens += dataset.sample_tokens(within.begin + i);
    }
    const double context_share =
        total_bytes > 0 ? static_cast<double>(ContextBytesPerToken(*placement.slots[0].drafter) *
                                              total_tokens) /
                              static_cast<double>(total_bytes)
                        : 0.0;
    const double per_worker = static_cast<double>(dataset.stream_budget_bytes()) / workers;
    ranges = SplitUnderCap(bytes, static_cast<int64_t>(per_worker / (2.0 + context_share)));
  } else {
    std::vector<int64_t> tokens(n);
    for (size_t i = 0; i < n; ++i) tokens[i] = dataset.sample_tokens(within.begin + i);
    ranges = SplitEvenly(tokens, shards);
  }
  for (SampleRange& r : ranges) {  // dataset positions
    r.begin += within.begin;
    r.end += within.begin;
  }
  return ranges;
}

std::vector<types::EvalProgress> InitialTotals(const data::EvalDataset& dataset,
                                               const types::EvalOptions& options,
                                               const std::vector<SampleRange>& ranges) {
  std::vector<types::EvalProgress> initial(ranges.size());
  for (size_t k = 0; k < ranges.size(); ++k) {
    initial[k] = dataset.streamed() || ranges.size() == 1
                     ? types::EvalProgress{0, 0, 0, static_cast<int64_t>(ranges[k].size()), false}
                     : InitialProgress(dataset, options, ranges[k]);
  }
  return initial;
}

}  // namespace dflash::eval
