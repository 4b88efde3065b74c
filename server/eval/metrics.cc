// File: metrics.cc
// Accumulates per-block outcomes into the §5 metrics. Everything is counted
// in integers; ratios are formed once in Finish().
#include "eval/metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dflash::eval {
namespace {

double Ratio(double num, int64_t den) {
  return den > 0 ? num / den : 0.0;
}

int ContextBucket(int64_t anchor) {
  int b = 0;
  while (b + 1 < types::kContextBuckets && anchor >= types::kContextBucketStarts[b + 1]) ++b;
  return b;
}

}  // namespace

MetricsAccumulator::MetricsAccumulator(int64_t block_size)
    : block_size_(std::max<int64_t>(block_size, 1)) {
  const int64_t draft_positions = block_size_ - 1;  // j = 1..B-1
  positions_.resize(draft_positions);
  for (int64_t j = 0; j < draft_positions; ++j) positions_[j].position = j + 1;
  ce_sum_.assign(draft_positions, 0.0);
  histogram_.assign(block_size_, 0);  // n = 0..B-1
}

int64_t MetricsAccumulator::LeadingMatches(const std::vector<uint8_t>& correct) {
  int64_t n = 0;
  while (n < static_cast<int64_t>(correct.size()) && correct[n] != 0) ++n;
  return n;
}

int64_t MetricsAccumulator::AcceptValue(int64_t n, int64_t accept_cap) {
  return accept_cap >= 0 ? std::min(n + 1, accept_cap) : n + 1;
}

types::SampleSummary& MetricsAccumulator::Slot(int64_t sample) {
  auto it = sample_slot_.find(sample);
  if (it != sample_slot_.end()) return samples_[it->second];
  sample_slot_.emplace(sample, samples_.size());
  samples_.push_back(types::SampleSummary{});
  types::SampleSummary& s = samples_.back();
  s.sample_index = sample;
  // The sample's own per-position counts: what intervals resample.
  for (auto* v : {&s.counted, &s.correct, &s.accepted, &s.conditional_counted}) {
    v->assign(positions_.size(), 0);
  }
  s.context_blocks.assign(types::kContextBuckets, 0);
  s.context_accepted.assign(types::kContextBuckets, 0);
  return s;
}

void MetricsAccumulator::BeginSample(int64_t sample, int64_t length, int64_t first_response) {
  types::SampleSummary& s = Slot(sample);
  s.length = length;
  s.first_response_position = first_response;
  s.response_tokens = first_response >= 0 ? std::max<int64_t>(0, length - first_response) : 0;
}

void MetricsAccumulator::SetLoops(int64_t sample, std::vector<uint8_t> loop_mask) {
  Slot(sample).loop_tokens = std::count(loop_mask.begin(), loop_mask.end(), uint8_t{1});
  loops_[sample] = std::move(loop_mask);
}

void MetricsAccumulator::SetLabels(int64_t sample, const std::string& category,
                                   const std::string& language, const std::string& thinking) {
  types::SampleSummary& s = Slot(sample);
  s.category = category;
  s.language = language;
  s.thinking = thinking;
}

absl::Status MetricsAccumulator::Merge(const MetricsAccumulator& shard) {
  if (shard.block_size_ != block_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard block size ", shard.block_size_, " differs from ", block_size_));
  }
  for (const types::SampleSummary& s : shard.samples_) {
    if (sample_slot_.count(s.sample_index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", s.sample_index, " is in two shards"));
    }
  }
  for (size_t j = 0; j < positions_.size(); ++j) {
    types::PositionMetrics& p = positions_[j];
    const types::PositionMetrics& q = shard.positions_[j];
    p.counted += q.counted;
    p.correct += q.correct;
    p.accepted += q.accepted;
    p.conditional_counted += q.conditional_counted;
    p.cross_entropy_counted += q.cross_entropy_counted;
    p.unary_correct += q.unary_correct;
    p.covered += q.covered;
    p.tf_correct += q.tf_correct;
    ce_sum_[j] += shard.ce_sum_[j];
  }
  for (size_t n = 0; n < histogram_.size(); ++n) histogram_[n] += shard.histogram_[n];
  for (const types::SampleSummary& s : shard.samples_) {
    sample_slot_.emplace(s.sample_index, samples_.size());
    samples_.push_back(s);
  }
  for (const auto& [sample, mask] : shard.loops_) loops_.emplace(sample, mask);
  blocks_ += shard.blocks_;
  tokens_ += shard.tokens_;
  accept_sum_ += shard.accept_sum_;
  labels_in_vocab_ += shard.labels_in_vocab_;
  dflash2_ = dflash2_ || shard.dflash2_;
  unary_accept_sum_ += shard.unary_accept_sum_;
  oracle_accept_sum_ += shard.oracle_accept_sum_;
  near_ties_ += shard.near_ties_;
  first_miss_.all_accepted += shard.first_miss_.all_accepted;
  first_miss_.coverage_miss += shard.first_miss_.coverage_miss;
  first_miss_.ranking_error += shard.first_miss_.ranking_error;
  return absl::OkStatus();
}

void MetricsAccumulator::Add(const BlockOutcome& block) {
  // A block never has more than B-1 draft positions; extra entries would be a
  // caller bug and are ignored rather than overrunning the tables.
  const int64_t measured = static_cast<int64_t>(block.correct.size());
  const int64_t exists =
      std::min<int64_t>(block.positions >= 0 ? block.positions : measured, block_size_ - 1);
  // Scored to the first miss, `correct` stops after it: n is still exact.
  const int64_t n = std::min(LeadingMatches(block.correct), exists);
  types::SampleSummary& s = Slot(block.sample);
  for (int64_t j = 1; j <= exists; ++j) {
    types::PositionMetrics& p = positions_[j - 1];
    // Past the measured slots (scored to the first miss) nothing is counted.
    const int64_t correct = j <= measured && block.correct[j - 1] != 0;
    const int64_t conditional = n >= j - 1;  // 1..j-1 all correct
    const int64_t accepted = n >= j;         // 1..j all correct
    ++p.counted;
    p.correct += correct;
    p.conditional_counted += conditional;
    p.accepted += accepted;
    ++s.counted[j - 1];
    s.correct[j - 1] += correct;
    s.conditional_counted[j - 1] += conditional;
    s.accepted[j - 1] += accepted;
    // NaN: the label is outside the draft vocabulary (no cross entropy).
    if (j - 1 < static_cast<int64_t>(block.cross_entropy.size()) &&
        !std::isnan(block.cross_entropy[j - 1])) {
      ce_sum_[j - 1] += block.cross_entropy[j - 1];
      ++p.cross_entropy_counted;
    }
  }
  // A block with no positions (anchor at the last token) still counts: n = 0,
  // and the target's bonus token makes its accept length 1.
  const int64_t value = AcceptValue(n, block.accept_cap);
  ++histogram_[n];
  ++blocks_;
  tokens_ += exists;
  labels_in_vocab_ += block.labels_in_vocab;
  accept_sum_ += value;
  ++s.blocks;
  s.accepted_total += value;
  const int bucket = ContextBucket(block.anchor);
  ++s.context_blocks[bucket];
  s.context_accepted[bucket] += value;
  auto loop = loops_.find(block.sample);
  if (loop != loops_.end() && block.anchor + 1 < static_cast<int64_t>(loop->second.size()) &&
      loop->second[block.anchor + 1] != 0) {
    ++s.loop_blocks;
    s.loop_accepted_total += value;
  }
  AddSelector(block, n, std::min(exists, measured));
}

void MetricsAccumulator::AddSelector(const BlockOutcome& block, int64_t n, int64_t measured) {
  const auto too_short = [&](const std::vector<uint8_t>& v) {
    return static_cast<int64_t>(v.size()) < measured;
  };
  if (block.covered.empty() || too_short(block.covered) || too_short(block.unary_correct) ||
      too_short(block.tf_correct)) {
    return;  // DFlash 1 (or a caller bug: never read past the vectors)
  }
  // DFlash 2: unary and oracle chains, per-position coverage and the
  // teacher-forced selector, and where the path first missed. Scored to the
  // first miss, each chain was followed until it broke.
  dflash2_ = true;
  const auto leading = [&](const std::vector<uint8_t>& v) {
    return std::min(LeadingMatches(v), measured);
  };
  unary_accept_sum_ += AcceptValue(leading(block.unary_correct), block.accept_cap);
  oracle_accept_sum_ += AcceptValue(leading(block.covered), block.accept_cap);
  for (int64_t j = 1; j <= measured; ++j) {
    types::PositionMetrics& p = positions_[j - 1];
    p.unary_correct += block.unary_correct[j - 1] != 0;
    p.covered += block.covered[j - 1] != 0;
    p.tf_correct += block.tf_correct[j - 1] != 0;
  }
  if (n == measured) {
    ++first_miss_.all_accepted;
  } else if (block.covered[n] == 0) {
    ++first_miss_.coverage_miss;
  } else {
    ++first_miss_.ranking_error;
  }
  near_ties_ += block.near_ties;
}

void MetricsAccumulator::MarkPositionsToFirstMiss(types::EvalResult& result) {
  result.positions_to_first_miss = true;
  for (types::PositionMetrics& p : result.positions) {
    p.correct = p.unary_correct = p.covered = p.tf_correct = 0;
    p.accuracy = p.unary_accuracy = p.coverage = p.tf_accuracy = 0;
  }
  result.selector_near_ties = 0;
  result.warnings.push_back(
      "each block was scored up to its first miss: acceptance, accept length, tau, the histogram "
      "and the conditional rates are exact; per-position accuracy (and DFlash 2's unary, "
      "coverage and teacher-forced rates and near ties) past the first miss was not measured; "
      "ask for --full-positions to compute every position");
}

types::EvalResult MetricsAccumulator::Finish(types::Mode mode) const {
  types::EvalResult r;
  r.mode = mode;
  r.block_size = block_size_;
  r.blocks = blocks_;
  r.tokens_scored = tokens_;
  r.labels_in_draft_vocab = labels_in_vocab_;
  r.accept_length_pooled = Ratio(static_cast<double>(accept_sum_), blocks_);
  r.accepted_histogram = histogram_;
  r.positions = positions_;
  for (size_t j = 0; j < r.positions.size(); ++j) {
    types::PositionMetrics& p = r.positions[j];
    p.accuracy = Ratio(static_cast<double>(p.correct), p.counted);
    p.acceptance = Ratio(static_cast<double>(p.accepted), p.counted);
    p.conditional = Ratio(static_cast<double>(p.accepted), p.conditional_counted);
    p.mean_cross_entropy = Ratio(ce_sum_[j], p.cross_entropy_counted);
    p.unary_accuracy = Ratio(static_cast<double>(p.unary_correct), p.counted);
    p.coverage = Ratio(static_cast<double>(p.covered), p.counted);
    p.tf_accuracy = Ratio(static_cast<double>(p.tf_correct), p.covered);
  }
  if (dflash2_) {
    r.unary_accept_length_pooled = Ratio(static_cast<double>(unary_accept_sum_), blocks_);
    r.oracle_accept_length_pooled = Ratio(static_cast<double>(oracle_accept_sum_), blocks_);
    r.first_miss = first_miss_;
    r.selector_near_ties = near_ties_;
  }
  double tau_sum = 0;
  int64_t response = 0, loop = 0, loop_accepted = 0;
  r.per_sample = samples_;
  for (types::SampleSummary& s : r.per_sample) {
    s.mean_accept_length = Ratio(static_cast<double>(s.accepted_total), s.blocks);
    if (s.blocks > 0) {
      ++r.samples;
      tau_sum += s.mean_accept_length;
    }
    response += s.response_tokens;
    loop += s.loop_tokens;
    loop_accepted += s.loop_accepted_total;
  }
  r.tau = Ratio(tau_sum, r.samples);
  r.loop_token_share = Ratio(static_cast<double>(loop), response);
  r.loop_accept_share = Ratio(static_cast<double>(loop_accepted), accept_sum_);
  return r;
}

}  // namespace dflash::eval
