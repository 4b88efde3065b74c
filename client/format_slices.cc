// File: format_slices.cc
#include "client/format_slices.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dflash::client {
namespace {

namespace pb = ::dflash::eval::v1;

std::string Ci(bool has, const pb::Interval& ci) {
  return has ? absl::StrFormat("[%.3f, %.3f]", ci.lo(), ci.hi()) : std::string("-");
}

}  // namespace

std::string FormatSlices(const pb::EvalResult& r) {
  if (r.slices_size() == 0) return "";
  std::string out = absl::StrFormat(
      "slices (docs/slices.md): %.1f%% of the response tokens in repeating loops, carrying "
      "%.1f%% of the accepted tokens\n",
      100 * r.loop_token_share(), 100 * r.loop_accept_share());
  absl::StrAppend(
      &out, absl::StrFormat("  %-24s %7s %8s %13s %19s %8s %19s\n", "slice", "samples", "blocks",
                            "accept length", "95% interval", "tau", "95% interval"));
  for (const pb::SliceResult& s : r.slices()) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-24s %7d %8d %13.3f %19s %8.3f %19s\n",
                              absl::StrCat(s.kind(), "=", s.value()), s.samples(), s.blocks(),
                              s.accept_length(), Ci(s.has_accept_length_ci(), s.accept_length_ci()),
                              s.tau(), Ci(s.has_tau_ci(), s.tau_ci())));
  }
  return out;
}

}  // namespace dflash::client
