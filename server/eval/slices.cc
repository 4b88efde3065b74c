// File: slices.cc
// Each slice is a set of resampling units, one per sample, holding only the
// slice's blocks and accept values; bootstrap.h then forms its accept
// length, tau and intervals as it does for the whole result.
#include "eval/slices.h"

#include <map>
#include <optional>

#include "absl/strings/str_format.h"
#include "eval/bootstrap.h"

namespace dflash::eval {
namespace {

types::SampleSummary Unit(int64_t blocks, int64_t accepted) {
  types::SampleSummary u;
  u.blocks = blocks;
  u.accepted_total = accepted;
  return u;
}

// The slice of `units` (samples without one of its blocks left out).
std::optional<types::SliceResult> MakeSlice(const std::string& kind, const std::string& value,
                                            const std::vector<types::SampleSummary>& units,
                                            int64_t resamples, uint64_t seed) {
  std::vector<const types::SampleSummary*> kept;
  types::SliceResult s{kind, value};
  for (const types::SampleSummary& u : units) {
    if (u.blocks <= 0) continue;
    kept.push_back(&u);
    s.blocks += u.blocks;
  }
  if (kept.empty()) return std::nullopt;
  s.samples = static_cast<int64_t>(kept.size());
  const std::vector<MetricId> metrics = {{MetricKind::kAcceptLength, 0}, {MetricKind::kTau, 0}};
  const std::vector<double> point =
      MetricValues(metrics, kept, std::vector<int64_t>(kept.size(), 1));
  s.accept_length = point[0];
  s.tau = point[1];
  if (resamples > 0 && kept.size() > 1) {
    const std::vector<std::optional<types::Interval>> ci =
        BootstrapIntervals(metrics, kept, resamples, seed);
    s.accept_length_ci = ci[0];
    s.tau_ci = ci[1];
  }
  return s;
}

}  // namespace

std::string ContextBucketName(int bucket) {
  static const char* const kNames[types::kContextBuckets] = {"0-512", "512-2k", "2k-8k", "8k+"};
  return bucket >= 0 && bucket < types::kContextBuckets ? kNames[bucket] : "?";
}

std::vector<types::SliceResult> Slices(const types::EvalResult& result, int64_t resamples,
                                       uint64_t seed) {
  std::vector<types::SliceResult> out;
  const auto add = [&](const std::string& kind, const std::string& value,
                       const std::vector<types::SampleSummary>& units) {
    if (auto s = MakeSlice(kind, value, units, resamples, seed)) out.push_back(*std::move(s));
  };
  using Field = std::string types::SampleSummary::*;
  for (auto [kind, field] :
       {std::pair<const char*, Field>{"category", &types::SampleSummary::category},
        {"language", &types::SampleSummary::language},
        {"thinking", &types::SampleSummary::thinking}}) {
    std::map<std::string, std::vector<types::SampleSummary>> by_value;
    for (const types::SampleSummary& s : result.per_sample) {
      if (!(s.*field).empty()) by_value[s.*field].push_back(Unit(s.blocks, s.accepted_total));
    }
    for (const auto& [value, units] : by_value) add(kind, value, units);
  }
  for (int b = 0; b < types::kContextBuckets; ++b) {
    std::vector<types::SampleSummary> units;
    for (const types::SampleSummary& s : result.per_sample) {
      if (b < static_cast<int>(s.context_blocks.size())) {
        units.push_back(Unit(s.context_blocks[b], s.context_accepted[b]));
      }
    }
    add("context", ContextBucketName(b), units);
  }
  std::vector<types::SampleSummary> loop, other;
  bool any_loop = false;
  for (const types::SampleSummary& s : result.per_sample) {
    any_loop = any_loop || s.loop_blocks > 0;
    loop.push_back(Unit(s.loop_blocks, s.loop_accepted_total));
    other.push_back(Unit(s.blocks - s.loop_blocks, s.accepted_total - s.loop_accepted_total));
  }
  if (any_loop) {
    add("continuation", "loop", loop);
    add("continuation", "no loop", other);
  }
  return out;
}

void AddSlices(const types::EvalOptions& options, types::EvalResult* result) {
  const int64_t resamples = options.ci == types::CiMethod::kNone ? 0 : options.ci_resamples;
  result->slices = Slices(*result, resamples, options.seed);
  if (result->loop_accept_share < kLoopWarnShare) return;
  std::string without = "none without them (every block is in a loop)";
  for (const types::SliceResult& s : result->slices) {
    if (s.kind == "continuation" && s.value == "no loop") {
      without = absl::StrFormat("%.3f without", s.accept_length);
    }
  }
  result->warnings.push_back(absl::StrFormat(
      "repeating loops: %.1f%% of the response tokens and %.1f%% of the accepted tokens lie in "
      "loops (docs/slices.md); accept length %.3f with those blocks, %s",
      100 * result->loop_token_share, 100 * result->loop_accept_share, result->accept_length_pooled,
      without));
}

}  // namespace dflash::eval
