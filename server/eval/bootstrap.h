// File: bootstrap.h
// 95% percentile-bootstrap intervals over samples, for one result and for
// the paired difference of two results on the same samples
// (docs/decision-metrics-stats.md). Torch-free: it resamples the per-sample
// counts that MetricsAccumulator keeps (SampleSummary), nothing else.
//
//   std::vector<MetricId> m = AllMetrics(result.positions.size());
//   auto ci = BootstrapIntervals(m, Units(result), 1000, /*seed=*/0);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "types/eval_types.h"

namespace dflash::eval {

// Every metric here is "higher is better".
enum class MetricKind { kAcceptLength, kTau, kAccuracy, kAcceptance, kConditional };
struct MetricId {
  MetricKind kind = MetricKind::kTau;
  int position = 0;  // j >= 1 for the per-position rates; 0 otherwise
};

// "accept_length", "tau", "accuracy[j]", "acceptance[j]", "conditional[j]".
std::string MetricName(const MetricId& m);
// Parses MetricName's form; `positions` (B - 1) bounds j. InvalidArgument
// names the accepted forms.
absl::StatusOr<MetricId> ParseMetric(absl::string_view name, int64_t positions);
// accept_length, tau, then accuracy/acceptance/conditional for j = 1..positions.
std::vector<MetricId> AllMetrics(int64_t positions);

// SplitMix64 (Steele et al. 2014): tiny, and the Python reference
// (tools/dflash_ref/bootstrap.py) reproduces its draws exactly.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // An index in [0, n): the high 64 bits of Next() * n.
  uint64_t Below(uint64_t n);

 private:
  uint64_t state_;
};

// The resampling units of a result: its samples with at least one block.
std::vector<const types::SampleSummary*> Units(const types::EvalResult& result);

// Each metric on the units weighted by `weights` (a resample's
// multiplicities; all ones = the point estimate). NaN where the metric's
// denominator is zero.
std::vector<double> MetricValues(const std::vector<MetricId>& metrics,
                                 const std::vector<const types::SampleSummary*>& units,
                                 const std::vector<int64_t>& weights);

// numpy's default percentile (linear between closest ranks) of sorted values.
double Percentile(const std::vector<double>& sorted, double q);

// The 2.5th and 97.5th percentiles of each metric over `resamples`
// resamples; resamples where a metric is undefined are left out of its
// percentiles; nullopt when no resample defines it or there are no units.
std::vector<std::optional<types::Interval>> BootstrapIntervals(
    const std::vector<MetricId>& metrics, const std::vector<const types::SampleSummary*>& units,
    int64_t resamples, uint64_t seed);

// The same for metric(b) - metric(a), where a[i] and b[i] are the same
// sample in two results: each resample draws one index set for both.
std::vector<std::optional<types::Interval>> PairedIntervals(
    const std::vector<MetricId>& metrics, const std::vector<const types::SampleSummary*>& a,
    const std::vector<const types::SampleSummary*>& b, int64_t resamples, uint64_t seed);

// Pairs the units of two results by sample index. FailedPrecondition, with
// why, when they were scored on different datasets, on different samples, or
// lack the per-sample counts (records from before them). `a_name`/`b_name`
// name the results in messages (job ids).
struct PairedUnits {
  std::vector<const types::SampleSummary*> a, b;
};
absl::StatusOr<PairedUnits> PairSamples(const types::EvalResult& a, absl::string_view a_name,
                                        const types::EvalResult& b, absl::string_view b_name);

// Sets result->*_ci from options.ci / ci_resamples / seed.
void AddIntervals(const types::EvalOptions& options, types::EvalResult* result);

// "better" (interval above zero), "worse" (below) or "no detectable difference".
const char* DifferenceVerdict(const std::optional<types::Interval>& delta_ci);

}  // namespace dflash::eval
