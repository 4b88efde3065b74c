#include "eval/run_inputs.h"

#include <algorithm>
#include <utility>

#include "eval/repetition.h"

namespace dflash::eval {

int64_t BlockSize(const model::DrafterModel& drafter, const types::EvalOptions& options) {
  return options.block_size > 0 ? options.block_size : drafter.config().block_size;
}

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

size_t NumSamples(const data::EvalDataset& dataset, const types::EvalOptions& options) {
  return options.max_samples > 0
             ? std::min(dataset.size(), static_cast<size_t>(options.max_samples))
             : dataset.size();
}

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

Positions ScoredPositions(const types::EvalOptions& options) {
  // Sampled acceptance reads every slot's alpha, so it scores every slot.
  if (options.full_positions || !options.sampling.empty()) return Positions::kAll;
  return options.mode == types::Mode::kReplay || options.metrics == types::MetricSet::kAcceptance
             ? Positions::kToFirstMiss
             : Positions::kAll;
}

void BeginSample(MetricsAccumulator& acc, const data::DatasetSample& sample,
                 const std::vector<int64_t>& tokens, int64_t first_response) {
  acc.BeginSample(sample.index, static_cast<int64_t>(tokens.size()), first_response);
  acc.SetLoops(sample.index, LoopMask(tokens, first_response));
  acc.SetLabels(sample.index, sample.metadata.category, sample.metadata.language,
                sample.metadata.thinking);
}

}  // namespace dflash::eval
