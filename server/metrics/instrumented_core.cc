#include "metrics/instrumented_core.h"

#include <chrono>

namespace dflash::metrics {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename Fn>
absl::StatusOr<core::LoadResult> TimedLoad(ServerMetrics& m, core::ResourceKind kind, Fn fn) {
  const auto start = Clock::now();
  absl::StatusOr<core::LoadResult> r = fn();
  // A reused resident object took no load; count it but not its time.
  if (!r.ok() || !r->reused) m.OnLoad(kind, r.status().code(), Since(start));
  return r;
}

}  // namespace

absl::StatusOr<core::LoadResult> InstrumentedCore::LoadDrafter(
    const core::LoadDrafterParams& params) {
  return TimedLoad(metrics_, core::ResourceKind::kDrafter,
                   [&] { return inner_.LoadDrafter(params); });
}

absl::StatusOr<core::LoadResult> InstrumentedCore::LoadTarget(
    const core::LoadTargetParams& params) {
  return TimedLoad(metrics_, core::ResourceKind::kTarget,
                   [&] { return inner_.LoadTarget(params); });
}

absl::StatusOr<core::LoadResult> InstrumentedCore::LoadDataset(
    const core::LoadDatasetParams& params) {
  return TimedLoad(metrics_, core::ResourceKind::kDataset,
                   [&] { return inner_.LoadDataset(params); });
}

absl::StatusOr<eval::EvalResult> InstrumentedCore::RunEval(const core::EvalParams& params,
                                                           const eval::ProgressFn& progress) {
  const auto start = Clock::now();
  absl::StatusOr<eval::EvalResult> r = inner_.RunEval(params, progress);
  metrics_.OnEval(r.status().code(), Since(start), r.ok() ? &*r : nullptr);
  return r;
}

}  // namespace dflash::metrics
