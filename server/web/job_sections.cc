// File: job_sections.cc
#include "web/job_sections.h"

#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "types/eval_result_fields.h"
#include "web/html.h"
#include "web/svg_plot.h"

namespace dflash::web {
namespace {

std::string Percent(int64_t part, int64_t blocks) {
  return absl::StrFormat(
      "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(blocks > 0 ? blocks : 1));
}

// DFlash 2 (docs/semantics.md): what the selector adds over the unary
// argmax, how far the top-k oracle is, and why blocks end (coverage vs
// ranking), as `dflash-eval results` prints it.
std::string SelectorRows(const types::EvalResult& r) {
  if (r.selector_top_k <= 0) return "";
  const types::FirstMissSplit& f = r.first_miss;
  const double lift = r.accept_length_pooled - r.unary_accept_length_pooled;
  return absl::StrCat(Row2("selector (top-k)", absl::StrCat(r.selector_top_k)),
                      Row2("accept length: unary argmax / top-k oracle",
                           absl::StrCat(Num(r.unary_accept_length_pooled), " / ",
                                        Num(r.oracle_accept_length_pooled))),
                      Row2("selector lift (with minus without)", absl::StrFormat("%+.4g", lift)),
                      Row2("first miss: coverage / ranking / all accepted",
                           absl::StrCat(Percent(f.coverage_miss, r.blocks), " / ",
                                        Percent(f.ranking_error, r.blocks), " / ",
                                        Percent(f.all_accepted, r.blocks))),
                      Row2("near-tie selector slots (< 1e-4)", absl::StrCat(r.selector_near_ties)));
}

std::string Headline(const types::EvalResult& r) {
  std::string out = "<table>";
  absl::StrAppend(&out,
                  Row2("accept length (pooled over blocks)",
                       WithInterval(r.accept_length_pooled, r.accept_length_ci)),
                  Row2("tau (mean over samples)", WithInterval(r.tau, r.tau_ci)),
                  Row2("samples / blocks / tokens",
                       absl::StrCat(r.samples, " / ", r.blocks, " / ", r.tokens_scored)),
                  Row2("semantics", Escape(absl::StrCat(r.family, ", ", r.semantics))),
                  SelectorRows(r));
  if (r.target_consistency.positions > 0) {
    absl::StrAppend(
        &out, Row2("target consistency",
                   absl::StrFormat("%.1f%% (%d of %d)", 100 * r.target_consistency.fraction,
                                   r.target_consistency.matches, r.target_consistency.positions)));
  }
  if (r.gate) {
    absl::StrAppend(&out, Row2("gate", absl::StrCat("<span class=\"",
                                                    r.gate->verdict == "worse" ? "worse" : "pass",
                                                    "\">", Escape(r.gate->text), "</span>")));
  }
  return absl::StrCat(out, "</table>");
}

// Per position: the chart of acceptance and the table (DFlash 2 adds the
// unary accuracy, the selector's coverage and its teacher-forced accuracy).
std::string Positions(const types::EvalResult& r) {
  const bool dflash2 = r.selector_top_k > 0;
  const bool cut = r.positions_to_first_miss;  // marginal columns not measured
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> labels;
  std::vector<double> acceptance;
  for (const types::PositionMetrics& p : r.positions) {
    const bool reached = p.counted > 0;
    const auto marginal = [&](double v) { return reached && !cut ? Num(v) : std::string("-"); };
    rows.push_back({absl::StrCat(p.position), absl::StrCat(p.counted),
                    reached && !cut ? WithInterval(p.accuracy, p.accuracy_ci) : "-",
                    reached ? WithInterval(p.acceptance, p.acceptance_ci) : "unavailable",
                    reached ? WithInterval(p.conditional, p.conditional_ci) : "unavailable"});
    if (dflash2) {
      rows.back().insert(rows.back().end(), {marginal(p.unary_accuracy), marginal(p.coverage),
                                             marginal(p.tf_accuracy)});
    }
    labels.push_back(absl::StrCat(p.position));
    acceptance.push_back(p.acceptance);
  }
  std::vector<std::string> header = {"position", "counted", "accuracy", "acceptance",
                                     "conditional"};
  if (dflash2) header.insert(header.end(), {"unary", "coverage", "tf-select"});
  return absl::StrCat(BarPlot("acceptance by position", labels, acceptance), Table(header, rows));
}

std::string Histogram(const types::EvalResult& r) {
  std::vector<std::string> ns;
  std::vector<double> hist;
  for (size_t n = 0; n < r.accepted_histogram.size(); ++n) {
    ns.push_back(absl::StrCat(n));
    hist.push_back(static_cast<double>(r.accepted_histogram[n]));
  }
  return BarPlot("blocks by accepted leading matches n", ns, hist);
}

// The draft-length curve: greedy, and one line per sampled setting.
std::string DraftLengthCurve(const types::EvalResult& r) {
  std::vector<PlotSeries> lines;
  const auto add = [&lines](const std::string& name, const std::vector<double>& curve) {
    if (curve.empty()) return;
    PlotSeries s{name};
    for (size_t k = 0; k < curve.size(); ++k) {
      s.points.push_back({static_cast<double>(k + 1), curve[k]});
    }
    lines.push_back(std::move(s));
  };
  add("greedy", r.draft_length_curve);
  for (const types::SampledAcceptance& s : r.sampling) {
    add(absl::StrCat("expected at ", SettingText(s.setting)), s.draft_length_curve);
  }
  return LinePlot("draft-length curve: accept length if k positions are proposed", "k", lines);
}

std::string Sampled(const types::EvalResult& r) {
  if (r.sampling.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const types::SampledAcceptance& s : r.sampling) {
    rows.push_back({Escape(SettingText(s.setting)),
                    WithInterval(s.expected_accept_length_pooled, s.accept_length_ci),
                    Num(s.expected_tau)});
  }
  return absl::StrCat("<h2>Sampled acceptance</h2>",
                      Table({"setting", "expected accept length", "expected tau"}, rows));
}

std::string Slices(const types::EvalResult& r) {
  if (r.slices.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const types::SliceResult& s : r.slices) {
    rows.push_back({Escape(absl::StrCat(s.kind, "=", s.value)), absl::StrCat(s.samples),
                    absl::StrCat(s.blocks), WithInterval(s.accept_length, s.accept_length_ci),
                    WithInterval(s.tau, s.tau_ci)});
  }
  return absl::StrCat("<h2>Slices</h2>",
                      Table({"slice", "samples", "blocks", "accept length", "tau"}, rows));
}

// Where the samples ran (issue 30), when they were split or streamed.
std::string Shards(const types::EvalResult& r) {
  bool read = false;
  for (const types::ShardPlacement& s : r.shards) read = read || s.bytes_read > 0;
  if (r.shards.size() < 2 && !read) return "";
  std::vector<std::vector<std::string>> rows;
  for (const types::ShardPlacement& s : r.shards) {
    rows.push_back({absl::StrCat("[", s.first, ", ", s.end, ")"), absl::StrCat(s.blocks),
                    Escape(s.device), Escape(s.server), absl::StrCat(s.bytes_read),
                    absl::StrFormat("%.3f", s.seconds)});
  }
  return absl::StrCat(
      "<h2>Shards</h2>",
      Table({"samples", "blocks", "device", "server", "bytes read", "seconds"}, rows));
}

// Every scalar field of the result's table (types/eval_result_fields.h) by
// name, folded away: a metric added to the table shows here unedited, even
// before a section gives it a row of its own.
std::string AllFields(const types::EvalResult& r) {
  std::vector<std::vector<std::string>> rows;
  types::ForEachField<types::EvalResult>([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    if constexpr (types::kIsScalar<T>) {
      if (f.flags & types::kStoreOnly) return;
      const T& v = r.*f.member;
      std::string cell;
      if constexpr (std::is_same_v<T, bool>) {
        cell = v ? "true" : "false";
      } else if constexpr (std::is_floating_point_v<T>) {
        cell = Num(v);
      } else if constexpr (std::is_integral_v<T>) {
        cell = absl::StrCat(v);
      } else {
        cell = Escape(v);
      }
      rows.push_back({f.name, cell});
    }
  });
  return absl::StrCat("<details><summary>All fields</summary>", Table({"field", "value"}, rows),
                      "</details>");
}

}  // namespace

std::string ResultSections(const types::EvalResult& r) {
  std::string out =
      absl::StrCat("<h2>Result</h2>", Headline(r), Positions(r), Histogram(r), DraftLengthCurve(r),
                   Sampled(r), Slices(r), Shards(r), AllFields(r));
  for (const types::DatasetResult& d : r.suite_results) {
    absl::StrAppend(&out, "<h2>Dataset ", Escape(d.dataset), "</h2>", ResultSections(d.result));
  }
  for (const std::string& w : r.warnings) {
    absl::StrAppend(&out, "<p class=\"note\">warning: ", Escape(w), "</p>");
  }
  return out;
}

}  // namespace dflash::web
