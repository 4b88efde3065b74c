#include "eval/sampled_acceptance.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "eval/bootstrap.h"
#include "types/proposal_policy.h"

namespace dflash::eval {

std::string SamplingSettingText(const types::SamplingSetting& s) {
  std::string out = absl::StrCat("t=", s.temperature);
  if (s.top_p != 1.0) absl::StrAppend(&out, ",p=", s.top_p);
  if (s.top_k > 0) absl::StrAppend(&out, ",k=", s.top_k);
  if (s.policy != types::ProposalPolicy::kDefault)
    absl::StrAppend(&out, " policy=", types::PolicyName(s.policy));
  if (!s.engine.empty()) absl::StrAppend(&out, " engine=", s.engine);
  return out;
}

absl::Status CheckSamplingSetting(const types::SamplingSetting& s) {
  if (!std::isfinite(s.temperature) || s.temperature < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sampling '", SamplingSettingText(s),
                                                   "': temperature must be >= 0 (0 = greedy)"));
  }
  if (!std::isfinite(s.top_p) || s.top_p <= 0 || s.top_p > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling '", SamplingSettingText(s), "': top_p must be in (0, 1] (1 = off)"));
  }
  if (s.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling '", SamplingSettingText(s), "': top_k must be >= 0 (0 = off)"));
  }
  return absl::OkStatus();
}

double ExpectedAcceptLength(const std::vector<float>& alpha) {
  double sum = 1, prod = 1;
  for (float a : alpha) {
    prod *= a;
    sum += prod;
  }
  return sum;
}

std::vector<double> ExpectedAcceptByDraftLength(const std::vector<float>& alpha,
                                                int64_t block_size) {
  std::vector<double> out(std::max<int64_t>(0, block_size - 1));
  double sum = 1, prod = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (k < alpha.size()) {
      prod *= alpha[k];
      sum += prod;
    }
    out[k] = sum;
  }
  return out;
}

SampledAccumulator::SampledAccumulator(std::vector<types::SamplingSetting> settings,
                                       int64_t block_size)
    : settings_(std::move(settings)), block_size_(block_size), per_(settings_.size()) {
  for (PerSetting& p : per_) {
    p.alpha_sum.assign(block_size_ - 1, 0);
    p.curve_sum.assign(block_size_ - 1, 0);
    p.marginal_sum.assign(block_size_ - 1, 0);
    p.counted.assign(block_size_ - 1, 0);
  }
}

void SampledAccumulator::Add(int64_t sample, const std::vector<std::vector<float>>& alpha) {
  ++blocks_;
  for (size_t s = 0; s < per_.size(); ++s) {
    PerSetting& p = per_[s];
    const std::vector<float> none;
    const std::vector<float>& a = s < alpha.size() ? alpha[s] : none;
    double prod = 1;
    for (size_t j = 0; j < a.size() && j < p.alpha_sum.size(); ++j) {
      p.alpha_sum[j] += a[j];
      ++p.counted[j];
      prod *= a[j];
      p.marginal_sum[j] += prod;
    }
    const double e = ExpectedAcceptLength(a);
    p.accept_sum += e;
    const std::vector<double> curve = ExpectedAcceptByDraftLength(a, block_size_);
    for (size_t k = 0; k < curve.size(); ++k) p.curve_sum[k] += curve[k];
    auto [it, fresh] = p.per_sample.emplace(sample, std::make_pair(0.0, int64_t{0}));
    if (fresh) p.sample_order.push_back(sample);
    it->second.first += e;
    ++it->second.second;
  }
}

absl::Status SampledAccumulator::Merge(const SampledAccumulator& shard) {
  if (shard.block_size_ != block_size_ || shard.per_.size() != per_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard has ", shard.per_.size(), " sampling setting(s) at block size ",
                     shard.block_size_, "; expected ", per_.size(), " at ", block_size_));
  }
  blocks_ += shard.blocks_;
  for (size_t s = 0; s < per_.size(); ++s) {
    PerSetting& p = per_[s];
    const PerSetting& q = shard.per_[s];
    for (size_t j = 0; j < p.alpha_sum.size(); ++j) {
      p.alpha_sum[j] += q.alpha_sum[j];
      p.curve_sum[j] += q.curve_sum[j];
      p.marginal_sum[j] += q.marginal_sum[j];
      p.counted[j] += q.counted[j];
    }
    p.accept_sum += q.accept_sum;
    for (int64_t sample : q.sample_order) {
      if (!p.per_sample.emplace(sample, q.per_sample.at(sample)).second) {
        return absl::InvalidArgumentError(absl::StrCat("sample ", sample, " is in two shards"));
      }
      p.sample_order.push_back(sample);
    }
  }
  return absl::OkStatus();
}

namespace {

// 95% percentile bootstrap of sum(E) / sum(blocks) over samples.
std::optional<types::Interval> PooledInterval(const std::vector<std::pair<double, int64_t>>& units,
                                              int64_t resamples, uint64_t seed) {
  if (resamples <= 0 || units.size() < 2) return std::nullopt;
  SplitMix64 rng(seed);
  std::vector<double> values;
  values.reserve(resamples);
  for (int64_t r = 0; r < resamples; ++r) {
    double sum = 0;
    int64_t blocks = 0;
    for (size_t i = 0; i < units.size(); ++i) {
      const auto& [s, b] = units[rng.Below(units.size())];
      sum += s;
      blocks += b;
    }
    if (blocks > 0) values.push_back(sum / blocks);
  }
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return types::Interval{Percentile(values, 0.025), Percentile(values, 0.975)};  // fractions
}

}  // namespace

std::vector<types::SampledAcceptance> SampledAccumulator::Finish(int64_t resamples,
                                                                 uint64_t seed) const {
  std::vector<types::SampledAcceptance> out;
  for (size_t s = 0; s < per_.size(); ++s) {
    const PerSetting& p = per_[s];
    types::SampledAcceptance r;
    r.setting = settings_[s];
    r.counted = p.counted;
    for (size_t j = 0; j < p.alpha_sum.size(); ++j) {
      r.mean_alpha.push_back(p.counted[j] > 0 ? p.alpha_sum[j] / p.counted[j] : 0);
    }
    if (blocks_ > 0) {
      r.expected_accept_length_pooled = p.accept_sum / blocks_;
      for (double c : p.curve_sum) r.draft_length_curve.push_back(c / blocks_);
      for (double m : p.marginal_sum) r.marginal_accept.push_back(m / blocks_);
      // P(exactly n) = P(>= n) - P(>= n + 1), P(>= 0) = 1.
      for (size_t n = 0; n <= r.marginal_accept.size(); ++n) {
        const double ge = n == 0 ? 1.0 : r.marginal_accept[n - 1];
        const double next = n < r.marginal_accept.size() ? r.marginal_accept[n] : 0.0;
        r.histogram.push_back(ge - next);
      }
    }
    double tau_sum = 0;
    std::vector<std::pair<double, int64_t>> units;
    for (int64_t sample : p.sample_order) {
      const auto& [sum, blocks] = p.per_sample.at(sample);
      tau_sum += sum / blocks;
      units.emplace_back(sum, blocks);
    }
    if (!p.sample_order.empty()) r.expected_tau = tau_sum / p.sample_order.size();
    r.accept_length_ci = PooledInterval(units, resamples, seed);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dflash::eval
