#include "eval/replay_run.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "eval/run_inputs.h"

namespace dflash::eval {
namespace {

// One sequence's walk state in replay mode.
struct Walk {
  size_t sample = 0;
  std::vector<int64_t> tokens;
  int64_t end = 0;  // L' = min(L, P + max_new_tokens)
  int64_t pos = 0;  // current anchor s
  int64_t blocks = 0;
  bool active = true;
};

// zlab-current: z-lab's loop runs while s + 1 < L' (a block at L' - 1 would
// draft nothing); zlab-2025: while s < L'.
bool Continues(const Walk& w, bool current) {
  return current ? w.pos + 1 < w.end : w.pos < w.end;
}

// A walk of a sequence of L tokens whose response starts at P >= 0: it
// ends at L' = min(L, P + max_new_tokens) and starts at anchor P.
void StartWalk(Walk& w, int64_t L, int64_t P, int64_t max_new_tokens, bool current) {
  w.end = max_new_tokens > 0 ? std::min(L, P + max_new_tokens) : L;
  w.pos = P;
  w.active = Continues(w, current);
}

// Each block advances a walk by at least one token, and zlab-current stops
// one token before the end: an upper bound on the blocks this walk has left.
int64_t MostBlocksLeft(const Walk& w, bool current, int64_t max_blocks) {
  const int64_t most = std::max<int64_t>(0, w.end - w.pos - (current ? 1 : 0));
  return max_blocks > 0 ? std::min(max_blocks - w.blocks, most) : most;
}

// The largest anchor a walk can reach: below L' and, with max_blocks, at
// most (max_blocks - 1) x B past P (a block advances at most B tokens).
int64_t LastAnchorBound(const Walk& w, int64_t B, int64_t max_blocks) {
  const int64_t last = w.end - 1;
  return max_blocks > 0 ? std::min(last, w.pos + (max_blocks - 1) * B) : last;
}

// One replay run: its walks, its counts and what every step reads.
struct ReplayState {
  ReplayState(const BlockScorer& s, const data::EvalDataset& d, const types::EvalOptions& o,
              const types::ProgressFn& p, MetricsAccumulator& a)
      : scorer(s),
        dataset(d),
        options(o),
        progress(p),
        acc(a),
        current(o.semantics == types::Semantics::kZlabCurrent),
        positions(ScoredPositions(o)) {}

  // The total is a bound until every walk ends (a walk stops early when its
  // blocks are accepted far), then exact: it tightens after every step.
  void UpdateTotal() {
    prog.blocks_total = prog.blocks_done;
    for (const Walk& w : walks) {
      if (w.active) prog.blocks_total += MostBlocksLeft(w, current, options.max_blocks);
    }
    prog.blocks_total_is_bound = prog.blocks_total > prog.blocks_done;
  }

  // A scored block moves its walk on (its verdicts are complete).
  void Finish(size_t wi, BlockScore&& score) {
    Walk& w = walks[wi];
    const int64_t accepted = MetricsAccumulator::LeadingMatches(score.correct);
    // zlab-current records produced = min(n + 1, L' - s - 1) and moves by it.
    const int64_t cap = current ? w.end - w.pos - 1 : -1;
    acc.Add(Outcome(dataset.sample(w.sample).index, w.pos, std::move(score), cap));
    w.pos += MetricsAccumulator::AcceptValue(accepted, cap);
    ++w.blocks;
    if (!Continues(w, current) || (options.max_blocks > 0 && w.blocks >= options.max_blocks)) {
      w.active = false;
      ++prog.samples_done;
    }
    ++prog.blocks_done;
  }

  // False: the caller cancelled.
  bool Report() const { return !progress || progress(prog); }

  const BlockScorer& scorer;
  const data::EvalDataset& dataset;
  const types::EvalOptions& options;
  const types::ProgressFn& progress;
  MetricsAccumulator& acc;
  const bool current;  // zlab-current semantics
  const Positions positions;
  types::EvalProgress prog;
  std::vector<Walk> walks;
  int64_t context_positions = 0;
};

// Each of the first n samples registered, and a walk for each that has a
// response (a sample with no block to draft is done already).
void StartWalks(ReplayState& st, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const data::DatasetSample& sample = st.dataset.sample(i);
    Walk w;
    w.sample = i;
    w.tokens = TokensOnHost(sample.input_ids);
    const int64_t L = static_cast<int64_t>(w.tokens.size());
    const int64_t P = FirstResponse(MaskOnHost(sample.loss_mask));
    BeginSample(st.acc, sample, w.tokens, P);
    if (P < 0) {  // no response tokens: nothing to draft
      ++st.prog.samples_done;
      continue;
    }
    StartWalk(w, L, P, st.options.max_new_tokens, st.current);
    if (!w.active) ++st.prog.samples_done;  // no block to draft (P = L' - 1): done already
    st.walks.push_back(std::move(w));
  }
}

// To the first miss, a walk's block waits for its next slice while the
// other walks draft theirs; each round is one forward and one vocabulary
// pass (slot_scoring.h, PendingSlots).
struct Pipeline {
  std::vector<std::pair<size_t, PendingSlots>> waiting;
  std::vector<bool> is_waiting;
};

// One pipelined round: the new blocks drafted, every waiting block's next
// slice scored, the blocks complete now finished.
absl::Status PipelinedRound(ReplayState& st, const std::vector<BlockRequest>& blocks,
                            const std::vector<size_t>& owner, const model::ContextCache& ctx,
                            Pipeline& pipe) {
  if (!blocks.empty()) {
    ASSIGN_OR_RETURN(std::vector<PendingSlots> drafted, st.scorer.Draft(blocks, ctx));
    for (size_t b = 0; b < drafted.size(); ++b) {
      pipe.waiting.emplace_back(owner[b], std::move(drafted[b]));
      pipe.is_waiting[owner[b]] = true;
    }
  }
  std::vector<PendingSlots*> items;
  items.reserve(pipe.waiting.size());
  for (auto& [w, p] : pipe.waiting) items.push_back(&p);
  RETURN_IF_ERROR(st.scorer.ScoreNextSlices(items, st.options.first_miss_slice));
  std::vector<std::pair<size_t, PendingSlots>> still;
  for (auto& [w, p] : pipe.waiting) {
    if (p.done()) {
      pipe.is_waiting[w] = false;
      st.Finish(w, std::move(p.score));
    } else {
      still.emplace_back(w, std::move(p));
    }
  }
  pipe.waiting = std::move(still);
  return absl::OkStatus();
}

// Walks [g, g_end) to their ends: sequences walk in groups that share one
// batched forward per step; the group's context K/V is computed once and
// reused by every step.
absl::Status WalkGroup(ReplayState& st, size_t g, size_t g_end) {
  std::vector<Walk>& walks = st.walks;
  std::vector<size_t> samples;
  std::vector<int64_t> needed, first;
  for (size_t w = g; w < g_end; ++w) {
    samples.push_back(walks[w].sample);
    needed.push_back(LastAnchorBound(walks[w], st.scorer.block_size(), st.options.max_blocks));
    first.push_back(walks[w].pos);  // the walk's first anchor, P
  }
  ASSIGN_OR_RETURN(model::ContextCache ctx, st.scorer.EncodeSamples(samples, &needed, &first));
  for (int64_t l : ctx.lengths) st.context_positions += l;
  const bool pipelined = st.positions == Positions::kToFirstMiss && st.scorer.CanPipeline();
  Pipeline pipe;
  pipe.is_waiting.assign(walks.size(), false);
  for (;;) {
    std::vector<BlockRequest> blocks;
    std::vector<size_t> owner;
    for (size_t w = g; w < g_end; ++w) {
      if (!walks[w].active || pipe.is_waiting[w]) continue;
      blocks.push_back(
          BlockRequest{static_cast<int64_t>(w - g), walks[w].pos, walks[w].end, &walks[w].tokens});
      owner.push_back(w);
    }
    if (blocks.empty() && pipe.waiting.empty()) break;
    if (!pipelined) {
      ASSIGN_OR_RETURN(std::vector<BlockScore> scores,
                       st.scorer.Score(blocks, ctx, CrossEntropy::kSkip, st.positions,
                                       st.options.first_miss_slice));
      for (size_t b = 0; b < scores.size(); ++b) st.Finish(owner[b], std::move(scores[b]));
    } else {
      RETURN_IF_ERROR(PipelinedRound(st, blocks, owner, ctx, pipe));
    }
    st.UpdateTotal();
    if (!st.Report()) return absl::CancelledError("evaluation cancelled");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvalPart> RunReplay(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const types::EvalOptions& options,
                                   const types::ProgressFn& progress) {
  const size_t n = NumSamples(dataset, options);
  EvalPart part(scorer.block_size(), {});
  ReplayState st(scorer, dataset, options, progress, part.metrics);
  st.prog.samples_total = static_cast<int64_t>(n);
  StartWalks(st, n);
  st.UpdateTotal();
  const size_t group = static_cast<size_t>(std::max<int64_t>(1, scorer.SequencesPerGroup()));
  if (!st.Report()) return absl::CancelledError("evaluation cancelled");
  for (size_t g = 0; g < st.walks.size(); g += group) {
    RETURN_IF_ERROR(WalkGroup(st, g, std::min(st.walks.size(), g + group)));
  }
  part.context_positions = st.context_positions;
  return part;
}

int64_t ReplayBlocksBound(int64_t L, int64_t P, const types::EvalOptions& options) {
  const bool current = options.semantics == types::Semantics::kZlabCurrent;
  Walk w;
  StartWalk(w, L, P, options.max_new_tokens, current);
  return w.active ? MostBlocksLeft(w, current, options.max_blocks) : 0;
}

}  // namespace dflash::eval
