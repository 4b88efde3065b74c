// File: sampled_acceptance.h
// Expected acceptance under sampling from per-position alphas
// (docs/decision-metrics.md §2), and the draft-length curve of a block
// (§3, sampled). Pure C++, no torch: the hand-computed tests check it directly.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "types/eval_types.h"

namespace dflash::eval {

// InvalidArgument unless temperature >= 0, 0 < top_p <= 1 and top_k >= 0
// (all finite), naming the setting "t=0.6,p=0.95,k=20".
absl::Status CheckSamplingSetting(const types::SamplingSetting& s);
// "t=0.6,p=0.95,k=20" (p only when not 1, k only when not 0), then
// " policy=argmax" when the policy is not the default and " engine=vllm"
// with a preset.
std::string SamplingSettingText(const types::SamplingSetting& s);

// 1 + sum_{k=1..m} prod_{i<=k} alpha_i for a block whose first m = size()
// positions exist; the expected number of tokens one verification yields
// when positions are independent draws.
double ExpectedAcceptLength(const std::vector<float>& alpha);

// The same when only the first k positions are proposed: prefix[k - 1] for
// k = 1..B-1 (positions past the block's end add nothing).
std::vector<double> ExpectedAcceptByDraftLength(const std::vector<float>& alpha,
                                                int64_t block_size);

class SampledAccumulator {
 public:
  SampledAccumulator(std::vector<types::SamplingSetting> settings, int64_t block_size);

  // alpha[s][j - 1] for setting s and the block's existing positions j.
  void Add(int64_t sample, const std::vector<std::vector<float>>& alpha);

  // Adds a shard's sums (its samples follow this one's; see
  // MetricsAccumulator::Merge). InvalidArgument when the settings or block
  // sizes differ or a sample is in both.
  absl::Status Merge(const SampledAccumulator& shard);

  // One result per setting, in request order; empty without settings. With
  // resamples > 0, each expected accept length gets a 95% percentile
  // bootstrap interval over samples (SplitMix64 seeded with `seed`, as
  // eval/bootstrap.h draws).
  std::vector<types::SampledAcceptance> Finish(int64_t resamples = 0, uint64_t seed = 0) const;

 private:
  friend struct PartStateAccess;  // part_state.cc, as MetricsAccumulator's
  struct PerSetting {
    std::vector<double> alpha_sum, curve_sum, marginal_sum;
    std::vector<int64_t> counted;
    double accept_sum = 0;
    std::unordered_map<int64_t, std::pair<double, int64_t>> per_sample;  // sum, blocks
    std::vector<int64_t> sample_order;
  };
  std::vector<types::SamplingSetting> settings_;
  int64_t block_size_;
  int64_t blocks_ = 0;
  std::vector<PerSetting> per_;
};

}  // namespace dflash::eval
