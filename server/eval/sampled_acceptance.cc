#include "eval/sampled_acceptance.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dflash::eval {

std::string SamplingSettingText(const SamplingSetting& s) {
  std::string out = absl::StrCat("t=", s.temperature);
  if (s.top_p != 1.0) absl::StrAppend(&out, ",p=", s.top_p);
  if (s.top_k > 0) absl::StrAppend(&out, ",k=", s.top_k);
  return out;
}

absl::Status CheckSamplingSetting(const SamplingSetting& s) {
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

SampledAccumulator::SampledAccumulator(std::vector<SamplingSetting> settings, int64_t block_size)
    : settings_(std::move(settings)), block_size_(block_size), per_(settings_.size()) {
  for (PerSetting& p : per_) {
    p.alpha_sum.assign(block_size_ - 1, 0);
    p.curve_sum.assign(block_size_ - 1, 0);
    p.counted.assign(block_size_ - 1, 0);
  }
}

void SampledAccumulator::Add(int64_t sample, const std::vector<std::vector<float>>& alpha) {
  ++blocks_;
  for (size_t s = 0; s < per_.size(); ++s) {
    PerSetting& p = per_[s];
    const std::vector<float> none;
    const std::vector<float>& a = s < alpha.size() ? alpha[s] : none;
    for (size_t j = 0; j < a.size() && j < p.alpha_sum.size(); ++j) {
      p.alpha_sum[j] += a[j];
      ++p.counted[j];
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

std::vector<SampledAcceptance> SampledAccumulator::Finish() const {
  std::vector<SampledAcceptance> out;
  for (size_t s = 0; s < per_.size(); ++s) {
    const PerSetting& p = per_[s];
    SampledAcceptance r;
    r.setting = settings_[s];
    r.counted = p.counted;
    for (size_t j = 0; j < p.alpha_sum.size(); ++j) {
      r.mean_alpha.push_back(p.counted[j] > 0 ? p.alpha_sum[j] / p.counted[j] : 0);
    }
    if (blocks_ > 0) {
      r.expected_accept_length_pooled = p.accept_sum / blocks_;
      for (double c : p.curve_sum) r.draft_length_curve.push_back(c / blocks_);
    }
    double tau_sum = 0;
    for (int64_t sample : p.sample_order) {
      const auto& [sum, blocks] = p.per_sample.at(sample);
      tau_sum += sum / blocks;
    }
    if (!p.sample_order.empty()) r.expected_tau = tau_sum / p.sample_order.size();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dflash::eval
