#include "eval/result_invariants.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "eval/sampled_acceptance.h"

namespace dflash::eval {
namespace {

bool Near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

absl::Status Broken(const std::string& what) {
  return absl::InternalError(absl::StrCat("result invariant broken: ", what,
                                          "; the numbers are not reported (a bug: please report "
                                          "it with the request)"));
}

absl::Status CheckCounts(const types::EvalResult& r) {
  int64_t total = 0;
  for (int64_t h : r.accepted_histogram) total += h;
  if (total != r.blocks) {
    return Broken(absl::StrCat("the histogram counts ", total, " blocks, the result ", r.blocks));
  }
  // accepted[j] = blocks with n >= j; 1 + sum_j accepted[j] / blocks = mean(n + 1).
  double marginal_sum = 0;
  for (size_t j = 0; j < r.positions.size(); ++j) {
    int64_t at_least = 0;
    for (size_t n = j + 1; n < r.accepted_histogram.size(); ++n)
      at_least += r.accepted_histogram[n];
    if (r.positions[j].accepted != at_least) {
      return Broken(absl::StrCat("acceptance[", j + 1, "] counts ", r.positions[j].accepted,
                                 " blocks, the histogram ", at_least, " with n >= ", j + 1));
    }
    if (r.blocks > 0) marginal_sum += static_cast<double>(at_least) / r.blocks;
  }
  if (r.blocks == 0) return absl::OkStatus();
  const double from_marginals = 1 + marginal_sum;
  const bool capped = r.mode == types::Mode::kReplay;
  if (capped ? r.accept_length_pooled > from_marginals + 1e-9
             : !Near(r.accept_length_pooled, from_marginals)) {
    return Broken(absl::StrCat(
        "1 + sum of marginal acceptance is ", from_marginals, ", the pooled accept length ",
        r.accept_length_pooled,
        capped ? " (replay may be lower, never higher: the last step is capped)" : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckTau(const types::EvalResult& r) {
  double sum = 0;
  int64_t n = 0;
  for (const types::SampleSummary& s : r.per_sample) {
    if (s.blocks == 0) continue;
    sum += s.mean_accept_length;
    ++n;
  }
  if (n > 0 && !Near(r.tau, sum / n)) {
    return Broken(
        absl::StrCat("tau is ", r.tau, ", the mean of ", n, " per-sample means ", sum / n));
  }
  return absl::OkStatus();
}

// Every partition of the blocks adds up: context buckets and loop / no loop.
absl::Status CheckSlices(const types::EvalResult& r) {
  std::map<std::string, int64_t> blocks_by_kind;
  for (const types::SliceResult& s : r.slices) blocks_by_kind[s.kind] += s.blocks;
  for (const char* kind : {"context", "continuation"}) {
    auto it = blocks_by_kind.find(kind);
    if (it != blocks_by_kind.end() && it->second != r.blocks) {
      return Broken(absl::StrCat("the ", kind, " slices count ", it->second, " blocks, the result ",
                                 r.blocks));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSampled(const types::SampledAcceptance& s) {
  const std::string name = SamplingSettingText(s.setting);
  if (s.marginal_accept.empty()) return absl::OkStatus();  // no blocks
  double sum = 1, hist = 0, prev = 1;
  for (double m : s.marginal_accept) {
    if (m > prev + 1e-12 || m < 0) {
      return Broken(absl::StrCat("sampling '", name, "': a marginal acceptance of ", m, " after ",
                                 prev, " (must not increase)"));
    }
    sum += m;
    prev = m;
  }
  for (double h : s.histogram) hist += h;
  if (!Near(sum, s.expected_accept_length_pooled)) {
    return Broken(absl::StrCat("sampling '", name, "': 1 + sum of marginal acceptance is ", sum,
                               ", the expected accept length ", s.expected_accept_length_pooled));
  }
  if (!Near(hist, 1.0)) {
    return Broken(absl::StrCat("sampling '", name, "': the histogram sums to ", hist));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckResultInvariants(const types::EvalResult& r) {
  // A suite's own fields are macro averages; each dataset's result is checked.
  if (r.suite_results.empty()) {
    RETURN_IF_ERROR(CheckCounts(r));
    RETURN_IF_ERROR(CheckTau(r));
    RETURN_IF_ERROR(CheckSlices(r));
  }
  for (const types::SampledAcceptance& s : r.sampling) RETURN_IF_ERROR(CheckSampled(s));
  for (const types::DatasetResult& d : r.suite_results) {
    RETURN_IF_ERROR(CheckResultInvariants(d.result), "suite dataset '", d.dataset, "'");
  }
  return absl::OkStatus();
}

}  // namespace dflash::eval
