#include "eval/parts_run.h"

#include <algorithm>
#include <atomic>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include "common/torch_guard.h"
#include "eval/anchor_run.h"
#include "eval/block_scorer.h"
#include "eval/part_progress.h"
#include "eval/part_ranges.h"
#include "eval/replay_run.h"
#include "eval/run_inputs.h"

namespace dflash::eval {
namespace {

using Clock = std::chrono::steady_clock;

void ReleaseFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// One range's evaluation on one slot: its own scorer over its own samples.
absl::StatusOr<EvalPart> RunPart(const DeviceSlot& slot, const data::EvalDataset& part,
                                 const types::EvalOptions& options,
                                 const types::ProgressFn& progress) {
  absl::StatusOr<absl::StatusOr<EvalPart>> guarded =
      TorchGuard("evaluating", [&]() -> absl::StatusOr<EvalPart> {
        BlockScorer scorer(*slot.drafter, *slot.target, part, BlockSize(*slot.drafter, options),
                           options.max_chunk_elements, options.semantics,
                           options.logits_budget_bytes);
        if (!options.sampling.empty()) {
          scorer.EnableSampling(options.sampling, part.final_hidden()->norm_applied);
        }
        return options.mode == types::Mode::kAnchor ? RunAnchor(scorer, part, options, progress)
                                                    : RunReplay(scorer, part, options, progress);
      });
  if (!guarded.ok()) return guarded.status();
  return std::move(*guarded);
}

// What one range became: its part's counts, or why it has none.
struct RangeRun {
  SampleRange range;
  std::optional<EvalPart> part;
  absl::Status status;
  types::ShardPlacement where;
};

// Restores the server's thread count when a multi-slot run ends.
class ThreadShare {
 public:
  ThreadShare(const Placement& p, size_t workers) : p_(p) {
    active_ = workers > 1 && p.set_threads && p.threads > 0;
    if (active_) p.set_threads(std::max<int>(1, p.threads / static_cast<int>(workers)));
  }
  ~ThreadShare() {
    if (active_) p_.set_threads(p_.threads);
  }
  ThreadShare(const ThreadShare&) = delete;
  ThreadShare& operator=(const ThreadShare&) = delete;

 private:
  const Placement& p_;
  bool active_ = false;
};

// One RunParts call's ranges and the workers that run them: worker w
// starts on range w (every slot gets work), then takes the next unclaimed
// one.
class PartsRunner {
 public:
  PartsRunner(const Placement& placement, const data::EvalDataset& dataset,
              const types::EvalOptions& options, std::vector<SampleRange> ranges, bool whole,
              PartProgress& agg, size_t workers)
      : placement_(placement),
        dataset_(dataset),
        options_(options),
        part_options_(options),
        ranges_(std::move(ranges)),
        whole_(whole),
        agg_(agg),
        runs_(ranges_.size()),
        next_(workers) {
    for (size_t k = 0; k < ranges_.size(); ++k) runs_[k].range = ranges_[k];
    part_options_.max_samples = 0;  // a part holds exactly its range
  }

  // A worker scores its ranges one at a time; a streamed one reads the
  // next range it claims while scoring the current.
  void Work(const DeviceSlot& slot, size_t first) {
    size_t k = first;
    if (ranges_.size() == 1 && !dataset_.streamed() && whole_) {  // in one piece, as it is
      Evaluate(k, slot, &dataset_, absl::OkStatus(), options_, 0);
      return;
    }
    Clock::time_point t0 = Clock::now();
    std::future<absl::StatusOr<data::EvalDataset>> ahead =
        std::async(std::launch::async, &PartsRunner::Load, this, k, std::cref(slot));
    while (k < ranges_.size()) {
      absl::StatusOr<data::EvalDataset> part = ahead.get();
      const double load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      const size_t following = agg_.cancelled() ? ranges_.size() : next_++;
      if (following < ranges_.size()) {
        t0 = Clock::now();
        ahead = std::async(dataset_.streamed() ? std::launch::async : std::launch::deferred,
                           &PartsRunner::Load, this, following, std::cref(slot));
      }
      Evaluate(k, slot, part.ok() ? &*part : nullptr, part.status(), part_options_, load_seconds);
      if (dataset_.streamed()) {
        // The chunk's memory back to the system now: glibc keeps freed
        // blocks in its arenas (the reading threads' too), and chunk after
        // chunk would add up past the budget.
        part = absl::StatusOr<data::EvalDataset>(absl::CancelledError("released"));
        ReleaseFreedMemory();
      }
      k = following;
      if (agg_.cancelled() && ahead.valid()) {
        ahead.wait();  // a read under way ends before its dataset goes
        break;
      }
    }
  }

  // The parts in sample order, or why there are none: the first failure in
  // sample order; a part stopped because another failed says nothing of
  // its own.
  absl::StatusOr<PartsRun> Collect() {
    if (agg_.refused()) return absl::CancelledError("evaluation cancelled");
    for (const RangeRun& run : runs_) {
      if (!run.status.ok() && !(agg_.cancelled() && absl::IsCancelled(run.status))) {
        return run.status;
      }
    }
    for (const RangeRun& run : runs_) {
      if (!run.status.ok()) return run.status;
      if (!run.part.has_value()) return absl::CancelledError("evaluation cancelled");
    }
    PartsRun out;
    for (RangeRun& run : runs_) {
      out.parts.push_back(std::move(*run.part));
      out.where.push_back(run.where);
    }
    return out;
  }

 private:
  absl::StatusOr<data::EvalDataset> Load(size_t k, const DeviceSlot& slot) const {
    return dataset_.Part(ranges_[k].begin, ranges_[k].end, slot.drafter->device());
  }

  // Range k scored on `slot`; `part` is null when reading it failed with
  // `read`. A failure stops the other parts at their next report.
  void Evaluate(size_t k, const DeviceSlot& slot, const data::EvalDataset* part,
                const absl::Status& read, const types::EvalOptions& part_opts,
                double load_seconds) {
    RangeRun& run = runs_[k];
    const Clock::time_point t0 = Clock::now();
    run.where.first = static_cast<int64_t>(run.range.begin);
    run.where.end = static_cast<int64_t>(run.range.end);
    run.where.device = slot.name;
    run.where.server = placement_.server;
    if (part == nullptr) {
      run.status = read;
    } else {
      if (dataset_.streamed()) run.where.bytes_read = part->bytes();
      absl::StatusOr<EvalPart> done = RunPart(slot, *part, part_opts, agg_.For(k));
      if (done.ok()) {
        run.where.blocks = done->metrics.blocks();
        run.part.emplace(std::move(*done));
      } else {
        run.status = done.status();
      }
    }
    run.where.seconds = load_seconds + std::chrono::duration<double>(Clock::now() - t0).count();
    if (!run.status.ok()) agg_.Cancel();  // the others stop at their next report
  }

  const Placement& placement_;
  const data::EvalDataset& dataset_;
  const types::EvalOptions& options_;
  types::EvalOptions part_options_;
  const std::vector<SampleRange> ranges_;
  const bool whole_;  // the whole dataset in one range: run on it as it is
  PartProgress& agg_;
  std::vector<RangeRun> runs_;
  std::atomic<size_t> next_;  // the next unclaimed range
};

}  // namespace

absl::StatusOr<PartsRun> RunParts(const Placement& placement, const data::EvalDataset& dataset,
                                  const types::EvalOptions& options, const SampleRange& within,
                                  const types::ProgressFn& progress) {
  std::vector<SampleRange> ranges = PartRanges(placement, dataset, options, within);
  // The whole dataset (up to max_samples) in one piece runs on it as it is.
  const bool whole = within.begin == 0 && within.end == NumSamples(dataset, options);
  PartProgress agg(InitialTotals(dataset, options, ranges), progress);
  // Several ranges: their totals are known before any work (the caller may
  // refuse on them); one range reports its own first.
  if (ranges.size() > 1 && !agg.Start()) return absl::CancelledError("evaluation cancelled");

  const size_t workers = std::min(ranges.size(), placement.slots.size());
  PartsRunner runner(placement, dataset, options, std::move(ranges), whole, agg, workers);
  {
    ThreadShare share(placement, workers);
    if (workers == 1) {
      runner.Work(placement.slots[0], 0);
    } else {
      std::vector<std::thread> threads;
      threads.reserve(workers);
      for (size_t w = 0; w < workers; ++w) {
        threads.emplace_back([&runner, &placement, w] { runner.Work(placement.slots[w], w); });
      }
      for (std::thread& t : threads) t.join();
    }
  }
  return runner.Collect();
}

}  // namespace dflash::eval
