// File: eval_types.h
// The evaluation request and result as plain C++ (dflash-semantics §5). The
// service maps these to dflash.eval.v1.EvalRequest / EvalResult.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dflash::eval {

enum class Mode { kAnchor, kReplay };
enum class AnchorStrategy { kEven, kRandom, kAll };

struct EvalOptions {
  Mode mode = Mode::kAnchor;
  int64_t max_samples = 0;     // 0 = all
  int64_t max_blocks = 0;      // per sample; 0 = no limit
  AnchorStrategy anchors = AnchorStrategy::kEven;
  uint64_t seed = 0;
  int64_t block_size = 0;      // 0 = the drafter's; must be <= the drafter's
  int64_t max_new_tokens = 0;  // replay only; 0 = no limit
  // Memory budget for one batched forward, in attention-score elements
  // (blocks x heads x B x keys); chunks are sized to stay under it.
  int64_t max_chunk_elements = 64ll << 20;
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
};

struct SampleSummary {
  int64_t sample_index = 0;
  int64_t blocks = 0;
  double mean_accept_length = 0;   // mean of (n + 1) over its blocks
  int64_t length = 0;              // L
  int64_t first_response_position = 0;  // P
  int64_t accepted_total = 0;      // sum of (n + 1): replay adds up to L' - P
};

struct EvalResult {
  Mode mode = Mode::kAnchor;
  int64_t block_size = 0;
  int64_t samples = 0;             // samples with at least one block
  int64_t blocks = 0;
  int64_t tokens_scored = 0;       // positions compared
  double accept_length_pooled = 0; // mean over blocks of (n + 1), +1 = bonus token
  double tau = 0;                  // mean over samples of per-sample mean (n + 1)
  std::vector<PositionMetrics> positions;
  std::vector<int64_t> accepted_histogram;  // [n], n = 0..B-1
  std::vector<SampleSummary> per_sample;
  double setup_seconds = 0;
  double compute_seconds = 0;
  double tokens_per_second = 0;
  std::string device, dtype;
  // Which weights and which data produced these numbers (set by the core).
  std::string drafter_fingerprint, dataset_fingerprint;
  std::vector<std::string> warnings;
};

struct EvalProgress {
  int64_t blocks_done = 0, blocks_total = 0;
  int64_t samples_done = 0, samples_total = 0;
};

// Called between chunks; returning false cancels the evaluation (the
// evaluator then returns CancelledError).
using ProgressFn = std::function<bool(const EvalProgress&)>;

}  // namespace dflash::eval
