// File: eval_types.h
// The evaluation request and result as plain C++ (dflash-semantics §5). The
// service maps these to dflash.eval.v1.EvalRequest / EvalResult.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "types/semantics.h"

namespace dflash::types {

enum class Mode { kAnchor, kReplay };
enum class AnchorStrategy { kEven, kRandom, kAll };
enum class MetricSet { kAll, kAcceptance };

// How a serving engine proposes a draft token at position j and what q_j its
// verifier then sees (docs/served-acceptance.md):
//   kSample   x ~ q_j, the drafter's processed distribution; alpha = sum min(p, q)
//   kArgmax   x = the drafter's greedy choice, q one-hot; alpha = p(x)
//   kSelector DFlash 2: x ~ softmax(S_j / T) over the k candidates; alpha = sum min(p, q)
//   kMatch    x ~ q_j and the target's token y ~ p_j drawn apart, accepted when
//             x == y (no rejection sampling); alpha = sum p q
// kDefault is the drafter's own rule: kSample for DFlash 1, kSelector for
// DFlash 2 (the numbers before policies existed); resolved before scoring.
enum class ProposalPolicy { kDefault, kSample, kArgmax, kSelector, kMatch };

// One sampling setting as serving engines apply it (docs/decision-metrics.md):
// logits / temperature, keep the top_k largest, keep the smallest set of
// largest probabilities reaching top_p, renormalise. temperature 0 = greedy.
struct SamplingSetting {
  double temperature = 0;  // 0: greedy (one-hot argmax)
  double top_p = 1.0;      // 1: off
  int64_t top_k = 0;       // 0: off
  ProposalPolicy policy = ProposalPolicy::kDefault;
  // Whether top-k/top-p also truncate the drafter's q (kSample, kMatch), or
  // only the target's p, as the engine preset says.
  bool truncate_draft = true;
  std::string engine;  // the preset that chose policy and conventions ("" = none)
};

// How the result's 95% intervals are formed (docs/decision-metrics-stats.md).
enum class CiMethod { kBootstrap, kNone };

// A 95% percentile-bootstrap interval [lo, hi].
struct Interval {
  double lo = 0, hi = 0;
};

struct EvalOptions {
  Mode mode = Mode::kAnchor;
  int64_t max_samples = 0;  // 0 = all
  int64_t max_blocks = 0;   // per sample; 0 = no limit
  AnchorStrategy anchors = AnchorStrategy::kEven;
  uint64_t seed = 0;
  int64_t block_size = 0;      // 0 = the drafter's; must be <= the drafter's
  int64_t max_new_tokens = 0;  // replay only; 0 = no limit
  // Block masks, block lengths and the replay loop (model/semantics.h).
  Semantics semantics = kDefaultSemantics;
  // Memory budget for one batched forward, in attention-score elements
  // (blocks x heads x B x keys); chunks are sized to stay under it.
  int64_t max_chunk_elements = 64ll << 20;
  // What is scored (issue 14). kAcceptance: accept length, tau, histogram
  // and acceptance/conditional rates only; anchor mode then skips the cross
  // entropy and scores each block to its first miss, as replay does.
  MetricSet metrics = MetricSet::kAll;
  // Score every draft position, also past a block's first miss (replay, and
  // anchor mode with kAcceptance), for the per-position marginal accuracy.
  bool full_positions = false;
  // Logits of one projection chunk stay within this many bytes (set by the
  // server's --logits-budget-bytes; 0 = the default, eval/vocab_chunks.h).
  int64_t logits_budget_bytes = 0;
  // Draft slots per slice when scoring to the first miss (not part of the
  // request; tests vary it to exercise slices of small blocks). The same as
  // eval::kSliceWidth (eval/slot_scoring.h says why 2).
  int64_t first_miss_slice = 2;
  // Anchor mode: acceptance under these sampling settings too, from the
  // dataset's final hidden state (needs a consistent target, see
  // TargetConsistency). All settings share one forward.
  std::vector<SamplingSetting> sampling;
  // Each setting above is scored under each of these policies (empty: the
  // engine preset's, else the drafter's default); `engine` names a preset
  // (eval/engine_presets.h) that also sets top-k/top-p conventions.
  std::vector<ProposalPolicy> policies;
  std::string engine;
  // Intervals over samples: the bootstrap draws ci_resamples resamples from
  // a generator seeded with `seed`.
  CiMethod ci = CiMethod::kBootstrap;
  int64_t ci_resamples = 1000;
  // Contiguous sample ranges the evaluation splits into (issue 30), run on
  // every device slot the server has; 0: one per slot. In a fleet, a job
  // naming its dataset by path splits into this many shard jobs that any
  // server claims (fleet/fleet_shards.h).
  int64_t shards = 0;
  // A fleet's shard job: evaluates only the dataset positions
  // [sample_begin, sample_end) (sample_end 0: all), as shard `shard_index`
  // of the job `shard_of`.
  int64_t sample_begin = 0, sample_end = 0;
  std::string shard_of;
  int64_t shard_index = 0;
};

// Per dataset and target: the share of response positions whose next token
// is argmax(lm_head(final_norm(h))) of the captured final hidden state h.
struct TargetConsistency {
  int64_t positions = 0;      // positions p with loss_mask[p + 1] = 1
  int64_t matches = 0;        // argmax == t[p + 1]
  double fraction = 0;        // matches / positions
  bool norm_applied = false;  // the data's flag: h already final-normed
};

// Expected acceptance under one sampling setting (anchor mode, teacher-forced
// prefix, positions as independent draws): alpha_j = sum_x min(p_j, q_j).
struct SampledAcceptance {
  SamplingSetting setting;
  std::vector<double> mean_alpha;            // j = 1..B-1: mean over blocks where j exists
  std::vector<int64_t> counted;              // that denominator
  double expected_accept_length_pooled = 0;  // mean over blocks of 1 + sum_k prod_{i<=k} alpha_i
  double expected_tau = 0;                   // mean over samples of the per-sample mean
  // The expected accept length when only the first k positions are proposed,
  // k = 1..B-1 (the last equals expected_accept_length_pooled).
  std::vector<double> draft_length_curve;
  // marginal_accept[i] = mean over all blocks of prod_{j<=i+1} alpha_j =
  // P(accept length >= i + 2), so 1 + sum = expected_accept_length_pooled;
  // histogram[n] = the expected share of blocks accepting exactly n drafts.
  std::vector<double> marginal_accept;
  std::vector<double> histogram;
  std::optional<Interval> accept_length_ci;  // 95% over samples, when intervals are on
  std::vector<std::string> approximations;   // what the numbers assume
  std::string greedy_equivalent;             // "greedy" or "unary" (see the proto)
};

// Per-position numbers for j = 1..B-1 (positions[0] is j = 1).
struct PositionMetrics {
  int position = 0;
  int64_t counted = 0;              // blocks in which position j exists
  int64_t correct = 0;              // draft_j == label
  double accuracy = 0;              // correct / counted
  int64_t accepted = 0;             // positions 1..j all correct
  double acceptance = 0;            // accepted / counted
  int64_t conditional_counted = 0;  // 1..j-1 all correct and j exists
  double conditional = 0;           // accepted / conditional_counted
  double mean_cross_entropy = 0;    // anchor mode; 0 when not computed
  int64_t cross_entropy_counted = 0;
  // DFlash 2 only (dflash2-semantics §5); zero for DFlash 1.
  int64_t unary_correct = 0;  // argmax(logits[j]) == label
  double unary_accuracy = 0;  // unary_correct / counted
  int64_t covered = 0;        // label among the selector's top-k candidates
  double coverage = 0;        // covered / counted
  int64_t tf_correct = 0;     // teacher-forced selector picks the covered label
  double tf_accuracy = 0;     // tf_correct / covered
  // 95% intervals over samples (absent with --ci none or one sample).
  std::optional<Interval> accuracy_ci, acceptance_ci, conditional_ci;
};

// Where each block's first miss happened (DFlash 2); the three add up to the
// number of blocks.
struct FirstMissSplit {
  int64_t all_accepted = 0;   // no miss among the block's positions
  int64_t coverage_miss = 0;  // the label was not among the candidates
  int64_t ranking_error = 0;  // covered, but the selector chose another
};

struct SampleSummary {
  int64_t sample_index = 0;
  int64_t blocks = 0;
  double mean_accept_length = 0;        // mean of (n + 1) over its blocks
  int64_t length = 0;                   // L
  int64_t first_response_position = 0;  // P
  int64_t accepted_total = 0;           // sum of (n + 1): replay adds up to L' - P
  // Per-position counts of this sample's blocks (index 0 is j = 1): what
  // the bootstrap and the paired comparison resample. Empty in records
  // stored before they existed.
  std::vector<int64_t> counted, correct, accepted, conditional_counted;
  // Repetition (eval/repetition.h): response tokens (positions >= P), those
  // inside a repeating loop, and the blocks whose first drafted token lies in
  // one with their summed accept values.
  int64_t response_tokens = 0, loop_tokens = 0;
  int64_t loop_blocks = 0, loop_accepted_total = 0;
  // Blocks and summed accept values per anchor-position bucket
  // (kContextBuckets), in bucket order.
  std::vector<int64_t> context_blocks, context_accepted;
  // The dataset's per-sample metadata (data/sample_metadata.h); empty when
  // the dataset has none. thinking: "on", "off" or "".
  std::string category, language, thinking;
};

// Anchor-position buckets of the context slices: [0, 512), [512, 2048),
// [2048, 8192), [8192, inf).
inline constexpr int64_t kContextBucketStarts[] = {0, 512, 2048, 8192};
inline constexpr int kContextBuckets = 4;

// One slice of a result (eval/slices.h): the blocks of the samples whose
// metadata `kind` has `value` ("category" / "language" / "thinking"), or of
// the blocks in an anchor-position bucket ("context", "0-512") or in or out
// of a repeating loop ("continuation", "loop" / "no loop").
struct SliceResult {
  std::string kind, value;
  int64_t samples = 0;  // samples with at least one of the slice's blocks
  int64_t blocks = 0;
  double accept_length = 0;  // pooled over the slice's blocks
  double tau = 0;            // mean over its samples of their mean in the slice
  std::optional<Interval> accept_length_ci, tau_ci;
};

// A regression gate's outcome (eval --gate): the new job against a reference.
struct GateVerdict {
  std::string reference_job;  // empty when no reference was found
  std::string metric;         // e.g. "tau", "accept_length", "acceptance[1]"
  double min_delta = 0;
  double value = 0, reference_value = 0, delta = 0;  // delta = value - reference_value
  std::optional<Interval> delta_ci;                  // paired bootstrap
  // With a slice floor: the slice whose accept length fell most
  // ("category=code"; empty when no slice is in both results) and its
  // delta (this job's minus the reference's).
  std::string worst_slice;
  double worst_slice_delta = 0;
  // "worse" (delta_ci.hi < -min_delta, or the worst slice fell by more than
  // the floor), "pass", "no reference" or "error".
  std::string verdict;
  std::string text;  // the one-line verdict, in words
};

struct DatasetResult;

// Where one shard of an evaluation ran (issue 30): its sample range (dataset
// positions [first, end)), the device slot and server, what it read from
// disk (streamed datasets) and how long it took.
struct ShardPlacement {
  int64_t first = 0, end = 0;
  int64_t blocks = 0;
  std::string device, server;
  int64_t bytes_read = 0;
  double seconds = 0;
};

struct EvalResult {
  Mode mode = Mode::kAnchor;
  std::string family;               // "DFlash 1" / "DFlash 2"
  std::string semantics;            // "zlab-current" / "zlab-2025"
  std::string semantics_reference;  // the reference the rules come from
  int64_t block_size = 0;
  int64_t samples = 0;  // samples with at least one block
  int64_t blocks = 0;
  int64_t tokens_scored = 0;  // positions compared
  // A drafter with its own (speculators) vocabulary: its size and, of the
  // tokens_scored labels, how many it holds (the others can never be
  // drafted, and have no cross entropy). 0 / 0 otherwise.
  int64_t draft_vocab_size = 0;
  int64_t labels_in_draft_vocab = 0;
  // A block's accept value is n + 1 (+1 = the target's bonus token); under
  // zlab-current in replay it is min(n + 1, L' - s - 1), as z-lab's loop records.
  double accept_length_pooled = 0;  // mean over blocks of the accept value
  double tau = 0;                   // mean over samples of the per-sample mean
  std::vector<PositionMetrics> positions;
  std::vector<int64_t> accepted_histogram;  // [n], n = 0..B-1
  std::vector<SampleSummary> per_sample;
  // Slices by sample metadata, context length and repetition, and how much of
  // the response is a repeating loop: loop_token_share = loop tokens over
  // response tokens; loop_accept_share = the loop blocks' share of the summed
  // accept values (docs/slices.md).
  std::vector<SliceResult> slices;
  double loop_token_share = 0, loop_accept_share = 0;
  // DFlash 2 only: the same accept length for the unary argmax drafts and for
  // the top-k oracle (leading covered positions), the first-miss split, and
  // path slots whose best two selector scores differ by less than 1e-4.
  int64_t selector_top_k = 0;
  double unary_accept_length_pooled = 0;
  double oracle_accept_length_pooled = 0;
  FirstMissSplit first_miss;
  int64_t selector_near_ties = 0;
  // Anchor mode: the pooled accept length if only the first k positions of
  // each block were proposed, k = 1..B-1 (mean of min(n, k) + 1); the last
  // equals accept_length_pooled. Empty in replay mode.
  std::vector<double> draft_length_curve;
  // Sampled acceptance, one per requested setting, with the consistency of
  // the data and target it relies on (positions 0 when not computed).
  std::vector<SampledAcceptance> sampling;
  TargetConsistency target_consistency;
  double setup_seconds = 0;
  double compute_seconds = 0;
  double tokens_per_second = 0;
  std::string device, dtype;
  // Which weights and which data produced these numbers (set by the core).
  std::string drafter_fingerprint, dataset_fingerprint, target_fingerprint;
  std::vector<std::string> warnings;
  // Each block was scored up to its first miss (replay by default, anchor
  // mode with metrics=acceptance): the per-position marginals (correct,
  // accuracy, DFlash 2's unary/coverage/teacher-forced rates, near ties) are
  // not measured and left 0; everything acceptance reads is exact.
  bool positions_to_first_miss = false;
  // Dataset positions projected through fc into context K/V: each sample up
  // to the last position its scored blocks can see.
  int64_t context_positions = 0;
  // 95% intervals over samples (absent with --ci none or one sample).
  std::optional<Interval> accept_length_ci, tau_ci;
  // The shards the samples were split into, in sample order (one when the
  // evaluation ran in one piece on one device).
  std::vector<ShardPlacement> shards;
  // A fleet's shard job: its counts before finishing (eval/part_state.h),
  // for the parent job to merge; empty otherwise.
  std::string part_state;
  int64_t ci_resamples = 0;         // 0: no intervals
  std::optional<GateVerdict> gate;  // set when the job asked for a gate
  // A suite job (several datasets in one job): one result per dataset, in
  // the suite's order; the fields above are then the macro average (the
  // unweighted mean over datasets of each rate and length; counts summed).
  std::string suite;
  std::vector<DatasetResult> suite_results;
};

struct DatasetResult {
  std::string dataset;
  EvalResult result;
};

struct EvalProgress {
  int64_t blocks_done = 0, blocks_total = 0;
  int64_t samples_done = 0, samples_total = 0;
  // Replay: blocks_total is an upper bound until the last walk ends.
  bool blocks_total_is_bound = false;
};

// Called between chunks; returning false cancels the evaluation (the
// evaluator then returns CancelledError).
using ProgressFn = std::function<bool(const EvalProgress&)>;

}  // namespace dflash::types
