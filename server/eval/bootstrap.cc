// File: bootstrap.cc
// Percentile bootstrap over samples. A resample is a multiplicity vector
// (how often each unit was drawn); every metric is a ratio of weighted sums
// of the units' counts, so one pass over the drawn units gives them all.
#include "eval/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::eval {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kLow = 0.025, kHigh = 0.975;

double Ratio(double num, double den) {
  return den > 0 ? num / den : kNaN;
}

int64_t At(const std::vector<int64_t>& v, int j) {
  return j - 1 < static_cast<int>(v.size()) ? v[j - 1] : 0;
}

// Weighted sums over the units: what every metric is a ratio of.
struct Sums {
  double blocks = 0, accept = 0, tau_sum = 0, tau_n = 0;
  std::vector<double> counted, correct, accepted, conditional_counted;
};

Sums Sum(const std::vector<const types::SampleSummary*>& units, const std::vector<int64_t>& weights,
         int positions) {
  Sums s;
  for (auto* v : {&s.counted, &s.correct, &s.accepted, &s.conditional_counted}) {
    v->assign(positions, 0.0);
  }
  for (size_t i = 0; i < units.size(); ++i) {
    const double w = static_cast<double>(weights[i]);
    if (w == 0) continue;
    const types::SampleSummary& u = *units[i];
    s.blocks += w * u.blocks;
    s.accept += w * u.accepted_total;
    s.tau_sum += w * Ratio(static_cast<double>(u.accepted_total), u.blocks);
    s.tau_n += w;
    for (int j = 1; j <= positions; ++j) {
      s.counted[j - 1] += w * At(u.counted, j);
      s.correct[j - 1] += w * At(u.correct, j);
      s.accepted[j - 1] += w * At(u.accepted, j);
      s.conditional_counted[j - 1] += w * At(u.conditional_counted, j);
    }
  }
  return s;
}

int MaxPosition(const std::vector<MetricId>& metrics) {
  int p = 0;
  for (const MetricId& m : metrics) p = std::max(p, m.position);
  return p;
}

double Value(const MetricId& m, const Sums& s) {
  const int j = m.position - 1;
  switch (m.kind) {
    case MetricKind::kAcceptLength: return Ratio(s.accept, s.blocks);
    case MetricKind::kTau: return Ratio(s.tau_sum, s.tau_n);
    case MetricKind::kAccuracy: return Ratio(s.correct[j], s.counted[j]);
    case MetricKind::kAcceptance: return Ratio(s.accepted[j], s.counted[j]);
    case MetricKind::kConditional: return Ratio(s.accepted[j], s.conditional_counted[j]);
  }
  return kNaN;
}

// Draws `resamples` multiplicity vectors over n units; `fn` gets each one.
template <typename Fn>
void Draw(size_t n, int64_t resamples, uint64_t seed, Fn fn) {
  SplitMix64 rng(seed);
  std::vector<int64_t> weights(n);
  for (int64_t r = 0; r < resamples; ++r) {
    std::fill(weights.begin(), weights.end(), 0);
    for (size_t i = 0; i < n; ++i) ++weights[rng.Below(n)];
    fn(weights);
  }
}

std::vector<std::optional<types::Interval>> Intervals(std::vector<std::vector<double>>& draws) {
  std::vector<std::optional<types::Interval>> out(draws.size());
  for (size_t m = 0; m < draws.size(); ++m) {
    std::vector<double>& v = draws[m];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    out[m] = types::Interval{Percentile(v, kLow), Percentile(v, kHigh)};
  }
  return out;
}

}  // namespace

std::string MetricName(const MetricId& m) {
  switch (m.kind) {
    case MetricKind::kAcceptLength: return "accept_length";
    case MetricKind::kTau: return "tau";
    case MetricKind::kAccuracy: return absl::StrCat("accuracy[", m.position, "]");
    case MetricKind::kAcceptance: return absl::StrCat("acceptance[", m.position, "]");
    case MetricKind::kConditional: return absl::StrCat("conditional[", m.position, "]");
  }
  return "?";
}

absl::StatusOr<MetricId> ParseMetric(absl::string_view name, int64_t positions) {
  if (name == "accept_length") return MetricId{MetricKind::kAcceptLength, 0};
  if (name == "tau") return MetricId{MetricKind::kTau, 0};
  static const std::map<std::string, MetricKind> kRates = {
      {"accuracy", MetricKind::kAccuracy},
      {"acceptance", MetricKind::kAcceptance},
      {"conditional", MetricKind::kConditional}};
  const size_t open = name.find('[');
  auto kind = kRates.find(std::string(name.substr(0, open)));
  int j = 0;
  if (kind != kRates.end() && open != absl::string_view::npos && name.back() == ']' &&
      absl::SimpleAtoi(name.substr(open + 1, name.size() - open - 2), &j) && j >= 1 &&
      j <= positions) {
    return MetricId{kind->second, j};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("metric '", name, "' is not accept_length, tau, accuracy[j], acceptance[j] or ",
                   "conditional[j] with j in 1..", positions));
}

std::vector<MetricId> AllMetrics(int64_t positions) {
  std::vector<MetricId> out = {{MetricKind::kAcceptLength, 0}, {MetricKind::kTau, 0}};
  for (int j = 1; j <= positions; ++j) {
    for (MetricKind k :
         {MetricKind::kAccuracy, MetricKind::kAcceptance, MetricKind::kConditional}) {
      out.push_back({k, j});
    }
  }
  return out;
}

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::Below(uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
}

std::vector<const types::SampleSummary*> Units(const types::EvalResult& result) {
  std::vector<const types::SampleSummary*> out;
  for (const types::SampleSummary& s : result.per_sample) {
    if (s.blocks > 0) out.push_back(&s);
  }
  return out;
}

std::vector<double> MetricValues(const std::vector<MetricId>& metrics,
                                 const std::vector<const types::SampleSummary*>& units,
                                 const std::vector<int64_t>& weights) {
  const Sums s = Sum(units, weights, MaxPosition(metrics));
  std::vector<double> out;
  out.reserve(metrics.size());
  for (const MetricId& m : metrics) out.push_back(Value(m, s));
  return out;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double h = (static_cast<double>(sorted.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::vector<std::optional<types::Interval>> BootstrapIntervals(
    const std::vector<MetricId>& metrics, const std::vector<const types::SampleSummary*>& units,
    int64_t resamples, uint64_t seed) {
  std::vector<std::vector<double>> draws(metrics.size());
  if (!units.empty()) {
    Draw(units.size(), resamples, seed, [&](const std::vector<int64_t>& w) {
      const std::vector<double> v = MetricValues(metrics, units, w);
      for (size_t m = 0; m < v.size(); ++m) {
        if (!std::isnan(v[m])) draws[m].push_back(v[m]);
      }
    });
  }
  return Intervals(draws);
}

std::vector<std::optional<types::Interval>> PairedIntervals(
    const std::vector<MetricId>& metrics, const std::vector<const types::SampleSummary*>& a,
    const std::vector<const types::SampleSummary*>& b, int64_t resamples, uint64_t seed) {
  std::vector<std::vector<double>> draws(metrics.size());
  if (!a.empty() && a.size() == b.size()) {
    Draw(a.size(), resamples, seed, [&](const std::vector<int64_t>& w) {
      const std::vector<double> va = MetricValues(metrics, a, w);
      const std::vector<double> vb = MetricValues(metrics, b, w);
      for (size_t m = 0; m < va.size(); ++m) {
        const double d = vb[m] - va[m];
        if (!std::isnan(d)) draws[m].push_back(d);
      }
    });
  }
  return Intervals(draws);
}

absl::StatusOr<PairedUnits> PairSamples(const types::EvalResult& a, absl::string_view a_name,
                                        const types::EvalResult& b, absl::string_view b_name) {
  for (const auto& [r, name] : {std::pair{&a, a_name}, std::pair{&b, b_name}}) {
    if (!r->suite_results.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot pair ", name, ": it is a suite job (", r->suite,
                       "); its per-dataset results pair only with jobs on one dataset"));
    }
  }
  if (a.dataset_fingerprint != b.dataset_fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot pair ", a_name, " and ", b_name, ": they were scored on different datasets (",
        a.dataset_fingerprint, " vs ", b.dataset_fingerprint, ")"));
  }
  PairedUnits p;
  p.a = Units(a);
  if (p.a.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot pair ", a_name, " and ", b_name, ": ",
                                                      a_name,
                                                      " has no sample with a scored block"));
  }
  std::map<int64_t, const types::SampleSummary*> in_b;
  for (const types::SampleSummary* s : Units(b)) in_b.emplace(s->sample_index, s);
  std::vector<std::string> only_a, only_b;
  for (const types::SampleSummary* s : p.a) {
    auto it = in_b.find(s->sample_index);
    if (it == in_b.end()) {
      only_a.push_back(absl::StrCat(s->sample_index));
      continue;
    }
    p.b.push_back(it->second);
    in_b.erase(it);
  }
  for (const auto& [index, s] : in_b) only_b.push_back(absl::StrCat(index));
  const auto few = [](std::vector<std::string> v) {
    const size_t n = v.size();
    if (n > 5) v.resize(5);
    return absl::StrCat(absl::StrJoin(v, ", "), n > 5 ? absl::StrCat(", ... (", n, ")") : "");
  };
  if (!only_a.empty() || !only_b.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot pair ", a_name, " and ", b_name, ": they scored different samples (only ", a_name,
        ": [", few(only_a), "]; only ", b_name, ": [", few(only_b),
        "]); compare jobs with the same max_samples on the same dataset"));
  }
  for (const auto* side : {&p.a, &p.b}) {
    for (const types::SampleSummary* s : *side) {
      if (s->counted.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot pair ", side == &p.a ? a_name : b_name, ": its record has no per-sample ",
            "counts (stored before intervals existed); resubmit it"));
      }
    }
  }
  return p;
}

void AddIntervals(const types::EvalOptions& options, types::EvalResult* result) {
  if (options.ci == types::CiMethod::kNone || options.ci_resamples <= 0) return;
  const std::vector<MetricId> metrics = AllMetrics(static_cast<int64_t>(result->positions.size()));
  std::vector<std::optional<types::Interval>> ci =
      BootstrapIntervals(metrics, Units(*result), options.ci_resamples, options.seed);
  result->ci_resamples = options.ci_resamples;
  result->accept_length_ci = ci[0];
  result->tau_ci = ci[1];
  for (size_t j = 0; j < result->positions.size(); ++j) {
    types::PositionMetrics& p = result->positions[j];
    // Scored to the first miss, per-position accuracy was not measured.
    if (!result->positions_to_first_miss) p.accuracy_ci = ci[2 + 3 * j];
    p.acceptance_ci = ci[3 + 3 * j];
    p.conditional_ci = ci[4 + 3 * j];
  }
}

const char* DifferenceVerdict(const std::optional<types::Interval>& delta_ci) {
  if (delta_ci && delta_ci->lo > 0) return "better";
  if (delta_ci && delta_ci->hi < 0) return "worse";
  return "no detectable difference";
}

}  // namespace dflash::eval
