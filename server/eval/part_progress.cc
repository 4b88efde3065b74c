#include "eval/part_progress.h"

#include <utility>

namespace dflash::eval {

PartProgress::PartProgress(std::vector<types::EvalProgress> initial, types::ProgressFn outer)
    : parts_(std::move(initial)), outer_(std::move(outer)) {}

bool PartProgress::Start() {
  if (parts_.empty()) return true;
  return Report(0, parts_[0]);
}

types::ProgressFn PartProgress::For(size_t k) {
  return [this, k](const types::EvalProgress& p) { return Report(k, p); };
}

bool PartProgress::Report(size_t k, const types::EvalProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  parts_[k] = p;
  types::EvalProgress sum;
  for (const types::EvalProgress& q : parts_) {
    sum.blocks_done += q.blocks_done;
    sum.blocks_total += q.blocks_total;
    sum.samples_done += q.samples_done;
    sum.samples_total += q.samples_total;
    sum.blocks_total_is_bound = sum.blocks_total_is_bound || q.blocks_total_is_bound;
  }
  if (outer_ && !outer_(sum)) {
    refused_ = true;
    cancelled_ = true;
    return false;
  }
  return true;
}

}  // namespace dflash::eval
