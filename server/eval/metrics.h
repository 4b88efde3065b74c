// File: metrics.h
// Turns per-block outcomes into the metrics of dflash-semantics §5. Pure
// C++, no torch: the hand-computed tests check it directly.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "types/eval_types.h"

namespace dflash::eval {

// One scored block. correct[j-1] says whether draft_j matched the label, for
// the positions j = 1.. that exist (a truncated block at the end of a
// sequence has fewer than B-1). cross_entropy is empty or the same length.
struct BlockOutcome {
  int64_t sample = 0;  // dataset sample index
  int64_t anchor = 0;
  std::vector<uint8_t> correct;
  std::vector<float> cross_entropy;
  // >= 0: the accept value is min(n + 1, accept_cap) (zlab-current replay:
  // L' - s - 1); -1: n + 1.
  int64_t accept_cap = -1;
  // DFlash 2 (empty for DFlash 1), same length as `correct`: the unary
  // argmax matched, the label was among the candidates, the teacher-forced
  // selector chose it; and the block's near-tie count.
  std::vector<uint8_t> unary_correct, covered, tf_correct;
  int64_t near_ties = 0;
  // Positions that exist when the vectors above stop early (scored to the
  // first miss, eval/slot_scoring.h); -1: correct.size().
  int64_t positions = -1;
  // Labels of the existing positions the drafter's vocabulary holds.
  int64_t labels_in_vocab = 0;
};

class MetricsAccumulator {
 public:
  explicit MetricsAccumulator(int64_t block_size);

  // Registers a sample (for per-sample summaries and tau) before its blocks.
  // A block of a sample never begun registers it with length 0.
  void BeginSample(int64_t sample, int64_t length, int64_t first_response);
  // The sample's loop mask (eval/repetition.h, [L]): its loop tokens are
  // counted, and a block whose first drafted token (anchor + 1) is marked
  // counts as a loop block. Without one no block is a loop block.
  void SetLoops(int64_t sample, std::vector<uint8_t> loop_mask);
  // The sample's metadata labels (data/sample_metadata.h), for the slices.
  void SetLabels(int64_t sample, const std::string& category, const std::string& language,
                 const std::string& thinking);
  // A block with no existing positions (anchor at L-1) counts as a block with
  // n = 0 and accept length 1, and adds to no position's denominators.
  void Add(const BlockOutcome& block);

  // Adds a shard's counts (issue 30): its samples follow this one's, so a
  // job split into contiguous sample ranges and merged in range order
  // finishes to the result of one pass. Counts are exact; floating sums
  // (cross entropy) differ only by summation order. InvalidArgument when
  // the block sizes differ or a sample is in both.
  absl::Status Merge(const MetricsAccumulator& shard);

  // n = leading matches of a block.
  static int64_t LeadingMatches(const std::vector<uint8_t>& correct);
  // The accept value of a block with n leading matches (see BlockOutcome).
  static int64_t AcceptValue(int64_t n, int64_t accept_cap);

  // per_sample lists every registered sample in BeginSample order, including
  // those without blocks; EvalResult::samples and tau count only samples with
  // at least one block.
  types::EvalResult Finish(types::Mode mode) const;
  int64_t blocks() const { return blocks_; }

  // For results scored to each block's first miss: the per-position
  // marginals past it (correct, accuracy, and DFlash 2's unary, coverage,
  // teacher-forced and near-tie counts) were not measured; they are cleared
  // and the result says so (positions_to_first_miss and a warning).
  static void MarkPositionsToFirstMiss(types::EvalResult& result);

 private:
  // Reads and rebuilds the counts below (part_state.cc: a fleet shard's
  // part stored and merged elsewhere).
  friend struct PartStateAccess;
  types::SampleSummary& Slot(int64_t sample);
  // DFlash 2's counts of a block with n leading path matches and `measured`
  // scored positions.
  void AddSelector(const BlockOutcome& block, int64_t n, int64_t measured);

  int64_t block_size_;
  std::vector<types::PositionMetrics> positions_;
  std::vector<double> ce_sum_;
  std::vector<int64_t> histogram_;
  std::vector<types::SampleSummary> samples_;                // in BeginSample order
  std::unordered_map<int64_t, size_t> sample_slot_;          // sample -> samples_ index
  std::unordered_map<int64_t, std::vector<uint8_t>> loops_;  // sample -> loop mask
  int64_t blocks_ = 0, tokens_ = 0, accept_sum_ = 0;
  int64_t labels_in_vocab_ = 0;  // summed BlockOutcome::labels_in_vocab
  // DFlash 2.
  bool dflash2_ = false;
  int64_t unary_accept_sum_ = 0, oracle_accept_sum_ = 0, near_ties_ = 0;
  types::FirstMissSplit first_miss_;
};

}  // namespace dflash::eval
