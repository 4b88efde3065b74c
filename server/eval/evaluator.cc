#include "eval/evaluator.h"

#include <algorithm>
#include <atomic>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "eval/anchors.h"
#include "eval/block_scorer.h"
#include "eval/draft_length_curve.h"
#include "eval/eval_part.h"
#include "eval/metrics.h"
#include "eval/part_progress.h"
#include "eval/part_state.h"
#include "eval/repetition.h"
#include "eval/result_invariants.h"
#include "eval/sampled_acceptance.h"
#include "eval/sampling_policy.h"
#include "eval/shard_plan.h"
#include "eval/slices.h"
#include "eval/target_consistency.h"

namespace dflash::eval {
namespace {

using Clock = std::chrono::steady_clock;

int64_t BlockSize(const model::DrafterModel& drafter, const EvalOptions& options) {
  return options.block_size > 0 ? options.block_size : drafter.config().block_size;
}

// First position with loss_mask == 1, or -1.
int64_t FirstResponse(const std::vector<uint8_t>& mask) {
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

std::vector<uint8_t> MaskOnHost(const at::Tensor& mask) {
  at::Tensor m = mask.to(at::kCPU, at::kByte).contiguous();
  return std::vector<uint8_t>(m.data_ptr<uint8_t>(), m.data_ptr<uint8_t>() + m.numel());
}

std::vector<int64_t> TokensOnHost(const at::Tensor& ids) {
  at::Tensor t = ids.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

size_t NumSamples(const data::EvalDataset& dataset, const EvalOptions& options) {
  return options.max_samples > 0
             ? std::min(dataset.size(), static_cast<size_t>(options.max_samples))
             : dataset.size();
}

// The metrics' view of a scored block.
BlockOutcome Outcome(int64_t sample, int64_t anchor, BlockScore&& score, int64_t accept_cap) {
  BlockOutcome o;
  o.sample = sample;
  o.anchor = anchor;
  o.correct = std::move(score.correct);
  o.cross_entropy = std::move(score.cross_entropy);
  o.accept_cap = accept_cap;
  o.unary_correct = std::move(score.unary_correct);
  o.covered = std::move(score.covered);
  o.tf_correct = std::move(score.tf_correct);
  o.near_ties = score.near_ties;
  o.positions = score.positions;
  o.labels_in_vocab = score.labels_in_vocab;
  return o;
}

// Which slots are scored and whether cross entropy is (anchor mode):
// replay reads only acceptance, so it stops at each block's first miss
// unless every position is asked for; anchor mode does when only
// acceptance is asked for.
Positions ScoredPositions(const EvalOptions& options) {
  // Sampled acceptance reads every slot's alpha, so it scores every slot.
  if (options.full_positions || !options.sampling.empty()) return Positions::kAll;
  return options.mode == Mode::kReplay || options.metrics == MetricSet::kAcceptance
             ? Positions::kToFirstMiss
             : Positions::kAll;
}

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
                                                   EvalProgress& prog, const ProgressFn& progress) {
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

// Registers a sample with its length, response start, loops and labels.
void BeginSample(MetricsAccumulator& acc, const data::DatasetSample& sample,
                 const std::vector<int64_t>& tokens, int64_t first_response) {
  acc.BeginSample(sample.index, static_cast<int64_t>(tokens.size()), first_response);
  acc.SetLoops(sample.index, LoopMask(tokens, first_response));
  acc.SetLabels(sample.index, sample.metadata.category, sample.metadata.language,
                sample.metadata.thinking);
}

absl::StatusOr<EvalPart> RunAnchor(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const EvalOptions& options, const ProgressFn& progress) {
  const int64_t B = scorer.block_size();
  const size_t n = NumSamples(dataset, options);
  EvalPart part(B, options.sampling);
  MetricsAccumulator& acc = part.metrics;
  SampledAccumulator& sampled = part.sampled;
  // Anchors first, so progress knows the total.
  AnchorPlan plan;
  plan.positions = ScoredPositions(options);
  plan.slice = options.first_miss_slice;
  if (options.metrics == MetricSet::kAcceptance) plan.cross_entropy = CrossEntropy::kSkip;
  plan.sampling = !options.sampling.empty();
  plan.anchors.resize(n);
  EvalProgress prog;
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

absl::StatusOr<EvalPart> RunReplay(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const EvalOptions& options, const ProgressFn& progress) {
  const int64_t B = scorer.block_size();
  const bool current = options.semantics == model::Semantics::kZlabCurrent;
  const size_t n = NumSamples(dataset, options);
  EvalPart part(B, {});
  MetricsAccumulator& acc = part.metrics;
  EvalProgress prog;
  prog.samples_total = static_cast<int64_t>(n);
  std::vector<Walk> walks;
  for (size_t i = 0; i < n; ++i) {
    const data::DatasetSample& sample = dataset.sample(i);
    Walk w;
    w.sample = i;
    w.tokens = TokensOnHost(sample.input_ids);
    const int64_t L = static_cast<int64_t>(w.tokens.size());
    const int64_t P = FirstResponse(MaskOnHost(sample.loss_mask));
    BeginSample(acc, sample, w.tokens, P);
    if (P < 0) {  // no response tokens: nothing to draft
      ++prog.samples_done;
      continue;
    }
    StartWalk(w, L, P, options.max_new_tokens, current);
    if (!w.active) ++prog.samples_done;  // no block to draft (P = L' - 1): done already
    walks.push_back(std::move(w));
  }
  // The total is a bound until every walk ends (a walk stops early when its
  // blocks are accepted far), then exact: it tightens after every step.
  const auto update_total = [&] {
    prog.blocks_total = prog.blocks_done;
    for (const Walk& w : walks) {
      if (w.active) prog.blocks_total += MostBlocksLeft(w, current, options.max_blocks);
    }
    prog.blocks_total_is_bound = prog.blocks_total > prog.blocks_done;
  };
  update_total();
  // Sequences walk in groups that share one batched forward per step; the
  // group's context K/V is computed once and reused by every step.
  const size_t group = static_cast<size_t>(std::max<int64_t>(1, scorer.SequencesPerGroup()));
  const Positions positions = ScoredPositions(options);
  int64_t context_positions = 0;
  if (progress && !progress(prog)) return absl::CancelledError("evaluation cancelled");
  for (size_t g = 0; g < walks.size(); g += group) {
    const size_t g_end = std::min(walks.size(), g + group);
    std::vector<size_t> samples;
    std::vector<int64_t> needed, first;
    for (size_t w = g; w < g_end; ++w) {
      samples.push_back(walks[w].sample);
      needed.push_back(LastAnchorBound(walks[w], B, options.max_blocks));
      first.push_back(walks[w].pos);  // the walk's first anchor, P
    }
    ASSIGN_OR_RETURN(model::ContextCache ctx, scorer.EncodeSamples(samples, &needed, &first));
    for (int64_t l : ctx.lengths) context_positions += l;
    // A scored block moves its walk on (its verdicts are complete).
    const auto finish = [&](size_t wi, BlockScore&& score) {
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
    };
    // To the first miss, a walk's block waits for its next slice while the
    // other walks draft theirs; each round is one forward and one vocabulary
    // pass (slot_scoring.h, PendingSlots).
    const bool pipelined = positions == Positions::kToFirstMiss && scorer.CanPipeline();
    std::vector<std::pair<size_t, PendingSlots>> waiting;
    std::vector<bool> is_waiting(walks.size(), false);
    for (;;) {
      std::vector<BlockRequest> blocks;
      std::vector<size_t> owner;
      for (size_t w = g; w < g_end; ++w) {
        if (!walks[w].active || is_waiting[w]) continue;
        blocks.push_back(BlockRequest{static_cast<int64_t>(w - g), walks[w].pos, walks[w].end,
                                      &walks[w].tokens});
        owner.push_back(w);
      }
      if (blocks.empty() && waiting.empty()) break;
      if (!pipelined) {
        ASSIGN_OR_RETURN(
            std::vector<BlockScore> scores,
            scorer.Score(blocks, ctx, CrossEntropy::kSkip, positions, options.first_miss_slice));
        for (size_t b = 0; b < scores.size(); ++b) finish(owner[b], std::move(scores[b]));
      } else {
        if (!blocks.empty()) {
          ASSIGN_OR_RETURN(std::vector<PendingSlots> drafted, scorer.Draft(blocks, ctx));
          for (size_t b = 0; b < drafted.size(); ++b) {
            waiting.emplace_back(owner[b], std::move(drafted[b]));
            is_waiting[owner[b]] = true;
          }
        }
        std::vector<PendingSlots*> items;
        items.reserve(waiting.size());
        for (auto& [w, p] : waiting) items.push_back(&p);
        RETURN_IF_ERROR(scorer.ScoreNextSlices(items, options.first_miss_slice));
        std::vector<std::pair<size_t, PendingSlots>> still;
        for (auto& [w, p] : waiting) {
          if (p.done()) {
            is_waiting[w] = false;
            finish(w, std::move(p.score));
          } else {
            still.emplace_back(w, std::move(p));
          }
        }
        waiting = std::move(still);
      }
      update_total();
      if (progress && !progress(prog)) return absl::CancelledError("evaluation cancelled");
    }
  }
  part.context_positions = context_positions;
  return part;
}

// Issue 18 item 5: when the dataset also holds the drafter's layers shifted
// by one (both numberings fit), a small sample (4 samples, 8 even anchors
// each) is scored under both readings and a warning gives the first-position
// accuracy of each. Nothing is switched: the evaluation reads the declared ids.
absl::StatusOr<std::vector<std::string>> LayerOffsetWarnings(const model::DrafterModel& drafter,
                                                             const weights::TargetTensors& target,
                                                             const data::EvalDataset& dataset,
                                                             const EvalOptions& options) {
  const std::vector<int>& ids = drafter.config().target_layer_ids;
  EvalOptions small = options;
  small.mode = Mode::kAnchor;
  small.max_samples = 4;
  small.max_blocks = 8;
  small.anchors = AnchorStrategy::kEven;
  small.metrics = MetricSet::kAcceptance;
  small.full_positions = false;
  small.sampling.clear();
  std::vector<std::string> out;
  for (const int shift : {-1, 1}) {
    std::vector<int> other;
    other.reserve(ids.size());
    for (const int id : ids) other.push_back(id + shift);
    if (*std::min_element(other.begin(), other.end()) < 0 || !dataset.CheckLayers(other).ok()) {
      continue;
    }
    double accuracy[2] = {0, 0};
    int64_t blocks = 0, samples = 0;
    for (int k = 0; k < 2; ++k) {
      BlockScorer scorer(drafter, target, dataset, BlockSize(drafter, small),
                         small.max_chunk_elements, small.semantics, small.logits_budget_bytes);
      if (k == 1) scorer.UseLayerIds(other);
      ASSIGN_OR_RETURN(EvalPart part, RunAnchor(scorer, dataset, small, nullptr));
      const EvalResult r = part.metrics.Finish(Mode::kAnchor);
      // Scored to the first miss: position 1's accuracy is its accepted rate.
      const PositionMetrics* p1 = r.positions.empty() ? nullptr : &r.positions[0];
      accuracy[k] = p1 != nullptr && p1->counted > 0
                        ? static_cast<double>(p1->accepted) / static_cast<double>(p1->counted)
                        : 0;
      blocks = r.blocks;
      samples = r.samples;
    }
    const std::string by = shift > 0 ? "+1" : "-1";
    out.push_back(absl::StrCat(
        "layer numbering check: the dataset also holds the drafter's layers shifted by ", by, " ([",
        absl::StrJoin(other, ", "), "]); first-position accuracy on ", samples, " sample(s), ",
        blocks, " block(s): ", absl::StrFormat("%.4f", accuracy[0]), " as declared ([",
        absl::StrJoin(ids, ", "), "], hf-layer) vs ", absl::StrFormat("%.4f", accuracy[1]),
        " shifted by ", by, "; ",
        accuracy[1] > accuracy[0]
            ? "the shifted reading scores higher: check the layer numbering declared by the "
              "drafter and by the dataset (the declared one was used; nothing was switched)"
            : "the declared reading scores at least as high (it was used)"));
  }
  return out;
}

// A range's totals before it starts, as its own first report will give
// them: anchor mode's selected anchors, replay's bound on its walks.
EvalProgress InitialProgress(const data::EvalDataset& dataset, const EvalOptions& options,
                             const SampleRange& range) {
  EvalProgress p;
  p.samples_total = static_cast<int64_t>(range.size());
  const bool current = options.semantics == model::Semantics::kZlabCurrent;
  for (size_t i = range.begin; i < range.end; ++i) {
    const data::DatasetSample& sample = dataset.sample(i);
    const std::vector<uint8_t> mask = MaskOnHost(sample.loss_mask);
    if (options.mode == Mode::kAnchor) {
      p.blocks_total += static_cast<int64_t>(
          SelectAnchors(mask.data(), static_cast<int64_t>(mask.size()), options.anchors,
                        options.max_blocks, options.seed, sample.index)
              .size());
      continue;
    }
    Walk w;
    const int64_t L = static_cast<int64_t>(mask.size());
    const int64_t P = FirstResponse(mask);
    if (P < 0) continue;
    StartWalk(w, L, P, options.max_new_tokens, current);
    if (w.active) p.blocks_total += MostBlocksLeft(w, current, options.max_blocks);
  }
  p.blocks_total_is_bound = options.mode == Mode::kReplay && p.blocks_total > 0;
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

void ReleaseFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// One range's evaluation on one slot: its own scorer over its own samples.
absl::StatusOr<EvalPart> RunPart(const DeviceSlot& slot, const data::EvalDataset& part,
                                 const EvalOptions& options, const ProgressFn& progress) {
  absl::StatusOr<absl::StatusOr<EvalPart>> guarded =
      TorchGuard("evaluating", [&]() -> absl::StatusOr<EvalPart> {
        BlockScorer scorer(*slot.drafter, *slot.target, part, BlockSize(*slot.drafter, options),
                           options.max_chunk_elements, options.semantics,
                           options.logits_budget_bytes);
        if (!options.sampling.empty()) {
          scorer.EnableSampling(options.sampling, part.final_hidden()->norm_applied);
        }
        return options.mode == Mode::kAnchor ? RunAnchor(scorer, part, options, progress)
                                             : RunReplay(scorer, part, options, progress);
      });
  if (!guarded.ok()) return guarded.status();
  return std::move(*guarded);
}

// What one range became: its part's counts, or why it has none.
struct RangeRun {
  SampleRange range;
  std::optional<EvalPart> part;
  absl::Status status;
  ShardPlacement where;
};

// Restores the server's thread count when a multi-slot run ends.
class ThreadShare {
 public:
  ThreadShare(const Placement& p, size_t workers) : p_(p) {
    active_ = workers > 1 && p.set_threads && p.threads > 0;
    if (active_) p.set_threads(std::max<int>(1, p.threads / static_cast<int>(workers)));
  }
  ~ThreadShare() {
    if (active_) p_.set_threads(p_.threads);
  }
  ThreadShare(const ThreadShare&) = delete;
  ThreadShare& operator=(const ThreadShare&) = delete;

 private:
  const Placement& p_;
  bool active_ = false;
};

// What RunParts gives: the parts in sample order and where each ran.
struct PartsRun {
  std::vector<EvalPart> parts;
  std::vector<ShardPlacement> where;
};

// The ranges of the samples `within` (all of them, or a fleet shard's
// range), how they run (see Evaluate in evaluator.h), in sample order.
absl::StatusOr<PartsRun> RunParts(const Placement& placement, const data::EvalDataset& dataset,
                                  const EvalOptions& options, const SampleRange& within,
                                  const ProgressFn& progress) {
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
  // The whole dataset (up to max_samples) in one piece runs on it as it is.
  const bool whole = within.begin == 0 && within.end == NumSamples(dataset, options);
  std::vector<RangeRun> runs(ranges.size());
  for (size_t k = 0; k < ranges.size(); ++k) runs[k].range = ranges[k];
  EvalOptions part_options = options;
  part_options.max_samples = 0;  // a part holds exactly its range
  std::vector<EvalProgress> initial(ranges.size());
  for (size_t k = 0; k < ranges.size(); ++k) {
    initial[k] = dataset.streamed() || ranges.size() == 1
                     ? EvalProgress{0, 0, 0, static_cast<int64_t>(ranges[k].size()), false}
                     : InitialProgress(dataset, options, ranges[k]);
  }
  PartProgress agg(std::move(initial), progress);
  // Several ranges: their totals are known before any work (the caller may
  // refuse on them); one range reports its own first.
  if (ranges.size() > 1 && !agg.Start()) return absl::CancelledError("evaluation cancelled");

  const size_t workers = std::min(ranges.size(), placement.slots.size());
  // Worker w starts on range w (every slot gets work), then takes the next
  // unclaimed one.
  std::atomic<size_t> next{workers};
  const auto load = [&](size_t k, const DeviceSlot& slot) -> absl::StatusOr<data::EvalDataset> {
    return dataset.Part(ranges[k].begin, ranges[k].end, slot.drafter->device());
  };
  // `part` is null when reading it failed with `read`.
  const auto evaluate = [&](size_t k, const DeviceSlot& slot, const data::EvalDataset* part,
                            const absl::Status& read, const EvalOptions& part_opts,
                            double load_seconds) {
    RangeRun& run = runs[k];
    const Clock::time_point t0 = Clock::now();
    run.where.first = static_cast<int64_t>(run.range.begin);
    run.where.end = static_cast<int64_t>(run.range.end);
    run.where.device = slot.name;
    run.where.server = placement.server;
    if (part == nullptr) {
      run.status = read;
    } else {
      if (dataset.streamed()) run.where.bytes_read = part->bytes();
      absl::StatusOr<EvalPart> done = RunPart(slot, *part, part_opts, agg.For(k));
      if (done.ok()) {
        run.where.blocks = done->metrics.blocks();
        run.part.emplace(std::move(*done));
      } else {
        run.status = done.status();
      }
    }
    run.where.seconds = load_seconds + std::chrono::duration<double>(Clock::now() - t0).count();
    if (!run.status.ok()) agg.Cancel();  // the others stop at their next report
  };
  // A worker scores its ranges one at a time; a streamed one reads the
  // next range it claims while scoring the current.
  const auto work = [&](const DeviceSlot& slot, size_t first) {
    size_t k = first;
    if (ranges.size() == 1 && !dataset.streamed() && whole) {  // in one piece, as it is
      evaluate(k, slot, &dataset, absl::OkStatus(), options, 0);
      return;
    }
    Clock::time_point t0 = Clock::now();
    std::future<absl::StatusOr<data::EvalDataset>> ahead =
        std::async(std::launch::async, load, k, std::cref(slot));
    while (k < ranges.size()) {
      absl::StatusOr<data::EvalDataset> part = ahead.get();
      const double load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      const size_t following = agg.cancelled() ? ranges.size() : next++;
      if (following < ranges.size()) {
        t0 = Clock::now();
        if (dataset.streamed()) {
          ahead = std::async(std::launch::async, load, following, std::cref(slot));
        } else {
          ahead = std::async(std::launch::deferred, load, following, std::cref(slot));
        }
      }
      evaluate(k, slot, part.ok() ? &*part : nullptr, part.status(), part_options, load_seconds);
      if (dataset.streamed()) {
        // The chunk's memory back to the system now: glibc keeps freed
        // blocks in its arenas (the reading threads' too), and chunk after
        // chunk would add up past the budget.
        part = absl::StatusOr<data::EvalDataset>(absl::CancelledError("released"));
        ReleaseFreedMemory();
      }
      k = following;
      if (agg.cancelled() && ahead.valid()) {
        ahead.wait();  // a read under way ends before its dataset goes
        break;
      }
    }
  };
  {
    ThreadShare share(placement, workers);
    if (workers == 1) {
      work(placement.slots[0], 0);
    } else {
      std::vector<std::thread> threads;
      threads.reserve(workers);
      for (size_t w = 0; w < workers; ++w) {
        threads.emplace_back(work, std::cref(placement.slots[w]), w);
      }
      for (std::thread& t : threads) t.join();
    }
  }
  if (agg.refused()) return absl::CancelledError("evaluation cancelled");
  // The first failure in sample order; a part stopped because another
  // failed says nothing of its own.
  for (const RangeRun& run : runs) {
    if (!run.status.ok() && !(agg.cancelled() && absl::IsCancelled(run.status))) {
      return run.status;
    }
  }
  for (const RangeRun& run : runs) {
    if (!run.status.ok()) return run.status;
    if (!run.part.has_value()) return absl::CancelledError("evaluation cancelled");
  }
  PartsRun out;
  for (RangeRun& run : runs) {
    out.parts.push_back(std::move(*run.part));
    out.where.push_back(run.where);
  }
  return out;
}

}  // namespace

absl::Status CheckCompatible(const model::DrafterModel& drafter,
                             const weights::TargetTensors& target, const data::EvalDataset& dataset,
                             const EvalOptions& options) {
  const config::DrafterConfig& cfg = drafter.config();
  RETURN_IF_ERROR(dataset.CheckLayers(cfg.target_layer_ids));
  const int64_t k = cfg.num_target_features();
  if (dataset.hidden_size() != target.hidden_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("dataset hidden size ", dataset.hidden_size(), " does not match the target's ",
                     target.hidden_size, " (embed_tokens [", target.vocab_size, ", ",
                     target.hidden_size, "]): the features were captured from another model"));
  }
  if (drafter.fc_in_features() != k * dataset.hidden_size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter fc takes ", drafter.fc_in_features(), " input features; its ", k,
        " target layers [", absl::StrJoin(cfg.target_layer_ids, ", "), "] x dataset hidden size ",
        dataset.hidden_size(), " give ", k * dataset.hidden_size()));
  }
  if (cfg.hidden_size != target.hidden_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter hidden size ", cfg.hidden_size, " does not match the target's ",
        target.hidden_size, ": the drafter cannot use this target's embed_tokens and lm_head"));
  }
  if (cfg.mask_token_id < 0 || cfg.mask_token_id >= target.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat("drafter mask_token_id ", cfg.mask_token_id,
                                                      " is outside the target's vocabulary [0, ",
                                                      target.vocab_size, ")"));
  }
  const int64_t B = BlockSize(drafter, options);
  if (B < 2 || B > cfg.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("block_size ", B, " must be in [2, ",
                                                   cfg.block_size, "] (the drafter's block size)"));
  }
  if (cfg.is_dflash2() && options.semantics == model::Semantics::kZlab2025) {
    return absl::FailedPreconditionError(
        "semantics 'zlab-2025' predates DFlash 2; evaluate a DFlash 2 drafter under "
        "'zlab-current'");
  }
  if (cfg.is_dflash2() && cfg.vocab_size != target.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter's candidate selector codebooks cover ", cfg.vocab_size,
                     " tokens (vocab_size); the target's vocabulary has ", target.vocab_size));
  }
  if (const model::DraftVocab* v = drafter.draft_vocab();
      v != nullptr && v->target_to_draft.size(0) != target.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter's t2d covers ", v->target_to_draft.size(0),
        " target ids (its target vocabulary); this target's vocabulary has ", target.vocab_size));
  }
  if (drafter.device() != target.embed.device()) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter is on ", drafter.device().str(), " but the target is on ",
                     target.embed.device().str(), "; load both on one device"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Evaluate(const model::DrafterModel& drafter,
                                    const weights::TargetTensors& target,
                                    const data::EvalDataset& dataset, const EvalOptions& options,
                                    const ProgressFn& progress) {
  Placement placement;
  placement.slots.push_back({&drafter, &target, drafter.device().str()});
  return Evaluate(placement, dataset, options, progress);
}

absl::StatusOr<EvalResult> Evaluate(const Placement& placement, const data::EvalDataset& dataset,
                                    const EvalOptions& options, const ProgressFn& progress) {
  if (placement.slots.empty()) return absl::InvalidArgumentError("no device slot to evaluate on");
  const model::DrafterModel& drafter = *placement.slots[0].drafter;
  const weights::TargetTensors& target = *placement.slots[0].target;
  if (!placement.compatibility_checked) {
    RETURN_IF_ERROR(CheckCompatible(drafter, target, dataset, options));
  }
  const Clock::time_point start = Clock::now();
  EvalOptions resolved = options;
  ASSIGN_OR_RETURN(resolved.sampling, ResolveSampling(options, drafter.selector() != nullptr));
  if (!resolved.sampling.empty()) {
    if (options.mode != Mode::kAnchor) {
      return absl::InvalidArgumentError(
          "sampled acceptance is computed in anchor mode only (teacher-forced positions); "
          "drop the sampling settings or use mode anchor");
    }
    if (drafter.draft_vocab() != nullptr) {
      return absl::FailedPreconditionError(
          "sampled acceptance with a drafter vocabulary of its own (speculators lm_head + d2t) is "
          "not computed by this service; drop the sampling settings");
    }
    RETURN_IF_ERROR(CheckTargetDistributionInputs(target, dataset));
  }
  SampleRange within{0, NumSamples(dataset, options)};
  const bool fleet_shard = options.sample_end > 0;
  if (fleet_shard) {
    within = {std::min<size_t>(options.sample_begin, within.end),
              std::min<size_t>(options.sample_end, within.end)};
    if (within.size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard range [", options.sample_begin, ", ", options.sample_end,
                       ") holds no sample of the dataset's ", NumSamples(dataset, options)));
    }
  }
  ASSIGN_OR_RETURN(PartsRun run, RunParts(placement, dataset, resolved, within, progress));
  std::string part_state;
  if (fleet_shard) {  // one part, kept for the parent job to merge
    ASSIGN_OR_RETURN(EvalPart merged, MergeParts(std::move(run.parts)));
    part_state = PartToJson(merged);
    run.parts.clear();
    run.parts.push_back(std::move(merged));
  }
  ASSIGN_OR_RETURN(EvalResult result, FinishParts(placement, dataset, options, std::move(run.parts),
                                                  std::move(run.where), start));
  result.part_state = std::move(part_state);
  return result;
}

absl::StatusOr<EvalPart> MergeParts(std::vector<EvalPart> parts) {
  if (parts.empty()) return absl::InvalidArgumentError("no evaluated part to merge");
  EvalPart merged = std::move(parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) {
    RETURN_IF_ERROR(merged.metrics.Merge(parts[k].metrics));
    RETURN_IF_ERROR(merged.sampled.Merge(parts[k].sampled));
    merged.context_positions += parts[k].context_positions;
  }
  return merged;
}

absl::StatusOr<EvalResult> FinishParts(const Placement& placement, const data::EvalDataset& dataset,
                                       const EvalOptions& options, std::vector<EvalPart> parts,
                                       std::vector<ShardPlacement> where,
                                       std::chrono::steady_clock::time_point start) {
  if (placement.slots.empty()) return absl::InvalidArgumentError("no device slot to finish on");
  const model::DrafterModel& drafter = *placement.slots[0].drafter;
  const weights::TargetTensors& target = *placement.slots[0].target;
  ASSIGN_OR_RETURN(EvalPart merged, MergeParts(std::move(parts)));
  absl::StatusOr<EvalResult> result = merged.metrics.Finish(options.mode);
  result->context_positions = merged.context_positions;
  if (options.mode == Mode::kAnchor) {
    result->draft_length_curve = DraftLengthCurve(result->accepted_histogram);
    result->sampling = merged.sampled.Finish(
        options.ci == CiMethod::kNone ? 0 : options.ci_resamples, options.seed);
  }
  result->shards = std::move(where);
  absl::StatusOr<absl::StatusOr<std::vector<std::string>>> offset =
      TorchGuard("checking the layer numbering", [&]() -> absl::StatusOr<std::vector<std::string>> {
        if (!dataset.streamed()) return LayerOffsetWarnings(drafter, target, dataset, options);
        // Its first samples, read again (the check scores at most four).
        ASSIGN_OR_RETURN(data::EvalDataset first,
                         dataset.Part(0, std::min<size_t>(4, dataset.size()), drafter.device()));
        return LayerOffsetWarnings(drafter, target, first, options);
      });
  if (!offset.ok()) return offset.status();
  if (!offset->ok()) return offset->status();
  for (std::string& w : **offset) result->warnings.push_back(std::move(w));
  // A capture read under a declared numbering or declared responses says so
  // in its result, not only in `ls` (issue 18).
  if (std::string notes = dataset.capture_notes(); !notes.empty()) {
    result->warnings.push_back(absl::StrCat("dataset: ", notes));
  }
  result->compute_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result->tokens_per_second =
      result->compute_seconds > 0 ? result->tokens_scored / result->compute_seconds : 0;
  result->device = drafter.device().str();
  const config::DrafterConfig& cfg = drafter.config();
  result->family = config::FamilyName(cfg.family);
  result->semantics = model::SemanticsName(options.semantics);
  result->semantics_reference = model::SemanticsReference(options.semantics);
  result->selector_top_k = cfg.selector_top_k;
  if (const model::DraftVocab* v = drafter.draft_vocab(); v != nullptr) {
    result->draft_vocab_size = v->size();
  } else {
    result->labels_in_draft_vocab = 0;  // no draft vocabulary: not reported
  }
  if (ScoredPositions(options) == Positions::kToFirstMiss) {
    MetricsAccumulator::MarkPositionsToFirstMiss(*result);
  }
  if (options.semantics == model::Semantics::kZlab2025 && cfg.is_causal.has_value()) {
    result->warnings.push_back(
        absl::StrCat("config sets is_causal ", *cfg.is_causal ? "true" : "false",
                     "; zlab-2025 ignores it (every layer bidirectional in the block)"));
  }
  for (SampledAcceptance& s : result->sampling) {
    s.approximations = {"teacher-forced prefix (position j sees the data's tokens, not the drafts)",
                        "independent positions (a block's acceptance is the product of alphas)"};
    s.greedy_equivalent = GreedyEquivalent(s.setting.policy, drafter.selector() != nullptr);
  }
  AddSlices(options, &*result);
  RETURN_IF_ERROR(CheckResultInvariants(*result));
  return result;
}

}  // namespace dflash::eval
