// File: job_view.cc
// One job: what was asked, its state and progress (the page reloads itself
// while the job runs), and the result laid out as tables and charts.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/recipe.h"
#include "store/record_json.h"
#include "types/proposal_policy.h"
#include "web/html.h"
#include "web/svg_plot.h"
#include "web/views.h"

namespace dflash::web {
namespace {

using jobs::JobRecord;

std::string Row2(const std::string& k, const std::string& v_html) {
  return absl::StrCat("<tr><th>", Escape(k), "</th><td>", v_html, "</td></tr>");
}

std::string Summary(const JobRecord& j) {
  const core::EvalParams& p = j.request.params;
  std::string out = "<table>";
  absl::StrAppend(&out, Row2("state", Escape(jobs::JobStateName(j.state))),
                  Row2("drafter", Escape(p.drafter.empty() ? p.checkpoint_path : p.drafter)),
                  Row2("dataset", Escape(p.dataset)), Row2("target", Escape(p.target)));
  if (!j.request.run.empty()) {
    absl::StrAppend(
        &out, Row2("run / step", absl::StrCat(Link(absl::StrCat("/runs/", UrlEncode(j.request.run)),
                                                   j.request.run),
                                              " / ", j.request.step)));
  }
  absl::StrAppend(&out, Row2("created", Time(j.create_unix_micros)),
                  Row2("ended", Time(j.end_unix_micros)),
                  Row2("device", Escape(absl::StrCat(j.device, " ", j.dtype))));
  if (j.state == jobs::JobState::kRunning || j.state == jobs::JobState::kQueued) {
    absl::StrAppend(
        &out, Row2("progress", absl::StrFormat("<span id=\"progress\">%d of %s%d blocks, "
                                               "%d of %d samples</span>",
                                               j.progress.blocks_done,
                                               j.progress.blocks_total_is_bound ? "&le;" : "",
                                               j.progress.blocks_total, j.progress.samples_done,
                                               j.progress.samples_total)));
  }
  if (!j.error_message.empty()) absl::StrAppend(&out, Row2("error", Escape(j.error_message)));
  return absl::StrCat(out, "</table>");
}

std::string ResultTables(const eval::EvalResult& r) {
  std::string out = "<h2>Result</h2><table>";
  absl::StrAppend(&out,
                  Row2("accept length (pooled over blocks)",
                       WithInterval(r.accept_length_pooled, r.accept_length_ci)),
                  Row2("tau (mean over samples)", WithInterval(r.tau, r.tau_ci)),
                  Row2("samples / blocks / tokens",
                       absl::StrCat(r.samples, " / ", r.blocks, " / ", r.tokens_scored)),
                  Row2("semantics", Escape(absl::StrCat(r.family, ", ", r.semantics))));
  if (r.selector_top_k > 0) {
    const double b = r.blocks > 0 ? static_cast<double>(r.blocks) : 1;
    absl::StrAppend(
        &out, Row2("selector (top-k)", absl::StrCat(r.selector_top_k)),
        Row2("accept length: unary argmax / top-k oracle",
             absl::StrCat(Num(r.unary_accept_length_pooled), " / ",
                          Num(r.oracle_accept_length_pooled))),
        Row2("first miss: coverage / ranking / all accepted",
             absl::StrFormat("%.1f%% / %.1f%% / %.1f%%", 100 * r.first_miss.coverage_miss / b,
                             100 * r.first_miss.ranking_error / b,
                             100 * r.first_miss.all_accepted / b)));
  }
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
  absl::StrAppend(&out, "</table>");
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> labels;
  std::vector<double> acceptance;
  for (const eval::PositionMetrics& p : r.positions) {
    const bool reached = p.counted > 0;
    rows.push_back(
        {absl::StrCat(p.position), absl::StrCat(p.counted),
         reached && !r.positions_to_first_miss ? WithInterval(p.accuracy, p.accuracy_ci) : "-",
         reached ? WithInterval(p.acceptance, p.acceptance_ci) : "unavailable",
         reached ? WithInterval(p.conditional, p.conditional_ci) : "unavailable"});
    labels.push_back(absl::StrCat(p.position));
    acceptance.push_back(p.acceptance);
  }
  absl::StrAppend(&out, BarPlot("acceptance by position", labels, acceptance),
                  Table({"position", "counted", "accuracy", "acceptance", "conditional"}, rows));
  std::vector<std::string> ns;
  std::vector<double> hist;
  for (size_t n = 0; n < r.accepted_histogram.size(); ++n) {
    ns.push_back(absl::StrCat(n));
    hist.push_back(static_cast<double>(r.accepted_histogram[n]));
  }
  absl::StrAppend(&out, BarPlot("blocks by accepted leading matches n", ns, hist));
  if (!r.draft_length_curve.empty()) {
    PlotSeries curve{"accept length"};
    for (size_t k = 0; k < r.draft_length_curve.size(); ++k) {
      curve.points.push_back({static_cast<double>(k + 1), r.draft_length_curve[k]});
    }
    absl::StrAppend(&out,
                    LinePlot("draft-length curve (first k positions proposed)", "k", {curve}));
  }
  if (!r.sampling.empty()) {
    std::vector<std::vector<std::string>> srows;
    for (const eval::SampledAcceptance& s : r.sampling) {
      srows.push_back({Escape(absl::StrFormat("T=%g top-p %g top-k %d %s", s.setting.temperature,
                                              s.setting.top_p, s.setting.top_k,
                                              eval::PolicyName(s.setting.policy))),
                       WithInterval(s.expected_accept_length_pooled, s.accept_length_ci),
                       Num(s.expected_tau)});
    }
    absl::StrAppend(&out, "<h2>Sampled acceptance</h2>",
                    Table({"setting", "expected accept length", "expected tau"}, srows));
  }
  if (!r.slices.empty()) {
    std::vector<std::vector<std::string>> srows;
    for (const eval::SliceResult& s : r.slices) {
      srows.push_back({Escape(absl::StrCat(s.kind, "=", s.value)), absl::StrCat(s.samples),
                       absl::StrCat(s.blocks), WithInterval(s.accept_length, s.accept_length_ci),
                       WithInterval(s.tau, s.tau_ci)});
    }
    absl::StrAppend(&out, "<h2>Slices</h2>",
                    Table({"slice", "samples", "blocks", "accept length", "tau"}, srows));
  }
  for (const eval::DatasetResult& d : r.suite_results) {
    absl::StrAppend(&out, "<h2>Dataset ", Escape(d.dataset), "</h2>", ResultTables(d.result));
  }
  for (const std::string& w : r.warnings) {
    absl::StrAppend(&out, "<p class=\"note\">warning: ", Escape(w), "</p>");
  }
  return out;
}

std::string RecipeTable(const JobRecord& j) {
  const core::Recipe recipe = core::RecipeOf(j);
  std::vector<std::vector<std::string>> rows;
  for (const core::RecipeField& f : recipe.fields)
    rows.push_back({Escape(f.name), Escape(f.value)});
  return absl::StrCat("<h2>Recipe ", Escape(recipe.fingerprint), "</h2>",
                      Table({"field", "value"}, rows));
}

}  // namespace

WebPage JobView(const JobRecord& job) {
  WebPage page;
  std::string body = Summary(job);
  if (job.result) absl::StrAppend(&body, ResultTables(*job.result), RecipeTable(job));
  const bool live = job.state == jobs::JobState::kRunning || job.state == jobs::JobState::kQueued;
  if (live) {
    // A running job's page follows it: reload every two seconds until it ends.
    absl::StrAppend(&body, "<script>setTimeout(function(){location.reload();}, 2000);</script>");
  }
  page.json = nlohmann::json::parse(store::RecordToJson(job));
  page.html =
      PageShell(absl::StrCat("Job ", job.id), body, absl::StrCat("/api/jobs/", UrlEncode(job.id)));
  return page;
}

}  // namespace dflash::web
