// File: part_progress.h
// One evaluation's progress over its parts (issue 30): each shard or chunk
// reports its own counts; the caller sees their sum, once at a time, and a
// false from it (cancel, the block limit) stops every part at its next
// report. Pure C++, no torch.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "types/eval_types.h"

namespace dflash::eval {

class PartProgress {
 public:
  // `initial`: each part's totals before it starts (counted in the sum
  // until the part reports its own).
  PartProgress(std::vector<types::EvalProgress> initial, types::ProgressFn outer);

  // Reports the summed totals before any part starts; false: refused.
  bool Start();
  // Part k's progress function.
  types::ProgressFn For(size_t k);
  // Stops every part at its next report (another part failed).
  void Cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  // True when the caller's function refused (not a Cancel()).
  bool refused() const { return refused_; }

 private:
  bool Report(size_t k, const types::EvalProgress& p);

  std::mutex mu_;
  std::vector<types::EvalProgress> parts_;
  types::ProgressFn outer_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> refused_{false};
};

}  // namespace dflash::eval
