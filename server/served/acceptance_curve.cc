#include "served/acceptance_curve.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace dflash::served {

std::vector<std::optional<double>> ConditionalRates(const std::vector<double>& marginal) {
  std::vector<std::optional<double>> out;
  out.reserve(marginal.size());
  double previous = 1.0;
  for (double m : marginal) {
    if (previous > 0) {
      out.push_back(m / previous);
    } else {
      out.push_back(std::nullopt);
    }
    previous = m;
  }
  return out;
}

absl::Status CheckCurveInvariants(const AcceptanceCurve& c) {
  const auto fail = [&](auto&&... parts) {
    return absl::InternalError(
        absl::StrCat("curve '", c.label, "' of job ", c.job_id, ": ", parts...));
  };
  if (c.block_size > 1 && static_cast<int64_t>(c.marginal.size()) != c.block_size - 1) {
    return fail(c.marginal.size(), " marginal rates for block size ", c.block_size, " (want ",
                c.block_size - 1, ")");
  }
  constexpr double kTol = 1e-9;
  double previous = 1.0, sum = 1.0;
  for (size_t i = 0; i < c.marginal.size(); ++i) {
    const double m = c.marginal[i];
    if (!(m >= -kTol && m <= 1 + kTol)) return fail("marginal[", i, "] = ", m, " is not in [0, 1]");
    if (m > previous + kTol) {
      return fail("marginal[", i, "] = ", m, " exceeds marginal[", i - 1, "] = ", previous,
                  " (accepting position ", i + 2, " needs every earlier one)");
    }
    previous = m;
    sum += m;
  }
  if (std::fabs(sum - c.mean_accept_length) > 1e-6 * std::max(1.0, sum)) {
    return fail("1 + sum(marginal) = ", sum, " but the mean accept length is ",
                c.mean_accept_length);
  }
  if (!c.histogram.empty()) {
    double total = 0;
    for (double h : c.histogram) total += h;
    if (c.blocks > 0 && std::fabs(total - 1) > 1e-6) return fail("histogram sums to ", total);
  }
  return absl::OkStatus();
}

}  // namespace dflash::served
