#include "eval/anchor_run.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "eval/anchors.h"
#include "eval/run_inputs.h"

namespace dflash::eval {
namespace {

// Anchor mode's per-sample inputs on the host, all selected before any
// work so that progress knows the totals.
struct AnchorPlan {
  std::vector<std::vector<uint8_t>> masks;    // loss masks
  std::vector<std::vector<int64_t>> anchors;  // selected anchors
  std::vector<std::vector<int64_t>> tokens;   // input ids
  Positions positions = Positions::kAll;
  int64_t slice = kSliceWidth;
  CrossEntropy cross_entropy = CrossEntropy::kCompute;
  int64_t context_positions = 0;  // projected so far
  bool sampling = false;          // blocks carry the final hidden state
};

// Samples are scored in groups: a group's contexts are encoded together
// and its blocks, of several sequences, share each batched forward, so
// the dense matmuls see many rows even when a sample has few blocks. A
// sample with more blocks than one chunk holds forms its own group.
// Returns the end of the group that starts at sample `begin`.
size_t GroupEnd(const BlockScorer& scorer, const AnchorPlan& plan, size_t begin) {
  constexpr size_t kMaxGroupSamples = 64;
  const size_t n = plan.tokens.size();
  int64_t longest = static_cast<int64_t>(plan.tokens[begin].size());
  size_t g_end = begin + 1;
  int64_t blocks_in_group = static_cast<int64_t>(plan.anchors[begin].size());
  while (g_end < n && g_end - begin < kMaxGroupSamples) {
    const int64_t l = std::max<int64_t>(longest, static_cast<int64_t>(plan.tokens[g_end].size()));
    const int64_t b = blocks_in_group + static_cast<int64_t>(plan.anchors[g_end].size());
    if (b > scorer.BlocksPerChunk(l)) break;
    longest = l;
    blocks_in_group = b;
    ++g_end;
  }
  return g_end;
}

// Scores the blocks of samples [begin, end) in chunks, in sample and
// anchor order, counting them into `prog` and reporting after each chunk.
absl::StatusOr<std::vector<BlockScore>> ScoreGroup(const BlockScorer& scorer,
                                                   const data::EvalDataset& dataset,
                                                   AnchorPlan& plan, size_t begin, size_t end,
                                                   types::EvalProgress& prog,
                                                   const types::ProgressFn& progress) {
  std::vector<size_t> members;
  std::vector<int64_t> needed;  // context positions each member's blocks can see
  std::vector<int64_t> lowest;  // each member's smallest anchor
  std::vector<BlockRequest> blocks;
  for (size_t s = begin; s < end; ++s) {
    if (plan.anchors[s].empty()) continue;
    const int64_t seq = static_cast<int64_t>(members.size());
    members.push_back(s);
    needed.push_back(*std::max_element(plan.anchors[s].begin(), plan.anchors[s].end()));
    lowest.push_back(*std::min_element(plan.anchors[s].begin(), plan.anchors[s].end()));
    const at::Tensor* final_hidden = plan.sampling ? &dataset.sample(s).final_hidden : nullptr;
    for (int64_t a : plan.anchors[s]) {
      blocks.push_back(BlockRequest{seq, a, static_cast<int64_t>(plan.tokens[s].size()),
                                    &plan.tokens[s], final_hidden});
    }
  }
  std::vector<BlockScore> scores;
  if (members.empty()) return scores;
  const data::DatasetSample& first = dataset.sample(members[0]);
  ASSIGN_OR_RETURN(model::ContextCache ctx, scorer.EncodeSamples(members, &needed, &lowest),
                   "sample ", first.index, " (", first.file, ")",
                   members.size() > 1 ? " and the samples after it" : "");
  for (int64_t l : ctx.lengths) plan.context_positions += l;
  const int64_t per_chunk = scorer.BlocksPerChunk(ctx.max_len);
  for (size_t b0 = 0; b0 < blocks.size(); b0 += per_chunk) {
    const size_t b1 = std::min(blocks.size(), b0 + static_cast<size_t>(per_chunk));
    std::vector<BlockRequest> chunk(blocks.begin() + b0, blocks.begin() + b1);
    ASSIGN_OR_RETURN(std::vector<BlockScore> part,
                     scorer.Score(chunk, ctx, plan.cross_entropy, plan.positions, plan.slice),
                     "sample ", first.index, " (", first.file, ")",
                     members.size() > 1 ? " and the samples after it" : "");
    for (BlockScore& sc : part) scores.push_back(std::move(sc));
    prog.blocks_done += static_cast<int64_t>(chunk.size());
    if (progress && !progress(prog)) {
      return absl::CancelledError("evaluation cancelled");
    }
  }
  return scores;
}

}  // namespace

absl::StatusOr<EvalPart> RunAnchor(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const types::EvalOptions& options,
                                   const types::ProgressFn& progress) {
  const int64_t B = scorer.block_size();
  const size_t n = NumSamples(dataset, options);
  EvalPart part(B, options.sampling);
  MetricsAccumulator& acc = part.metrics;
  SampledAccumulator& sampled = part.sampled;
  // Anchors first, so progress knows the total.
  AnchorPlan plan;
  plan.positions = ScoredPositions(options);
  plan.slice = options.first_miss_slice;
  if (options.metrics == types::MetricSet::kAcceptance) plan.cross_entropy = CrossEntropy::kSkip;
  plan.sampling = !options.sampling.empty();
  plan.anchors.resize(n);
  types::EvalProgress prog;
  prog.samples_total = static_cast<int64_t>(n);
  plan.masks.resize(n);
  for (size_t i = 0; i < n; ++i) {
    plan.masks[i] = MaskOnHost(dataset.sample(i).loss_mask);
    plan.anchors[i] =
        SelectAnchors(plan.masks[i].data(), static_cast<int64_t>(plan.masks[i].size()),
                      options.anchors, options.max_blocks, options.seed, dataset.sample(i).index);
    prog.blocks_total += static_cast<int64_t>(plan.anchors[i].size());
  }
  // Totals known before any work: the caller may refuse (limits) or show them.
  if (progress && !progress(prog)) return absl::CancelledError("evaluation cancelled");
  plan.tokens.resize(n);
  for (size_t i = 0; i < n; ++i) plan.tokens[i] = TokensOnHost(dataset.sample(i).input_ids);
  size_t i = 0;
  while (i < n) {
    const size_t g_end = GroupEnd(scorer, plan, i);
    ASSIGN_OR_RETURN(std::vector<BlockScore> scores,
                     ScoreGroup(scorer, dataset, plan, i, g_end, prog, progress));
    // Metrics in sample order, as if scored one sample at a time.
    size_t next = 0;
    for (size_t s = i; s < g_end; ++s) {
      const data::DatasetSample& sample = dataset.sample(s);
      BeginSample(acc, sample, plan.tokens[s], FirstResponse(plan.masks[s]));
      for (int64_t a : plan.anchors[s]) {
        if (plan.sampling) sampled.Add(sample.index, scores[next].alpha);
        acc.Add(Outcome(sample.index, a, std::move(scores[next]), /*accept_cap=*/-1));
        ++next;
      }
      ++prog.samples_done;
    }
    i = g_end;
  }
  part.context_positions = plan.context_positions;
  return part;
}

}  // namespace dflash::eval
