// File: runs_view.cc
// The runs page and a run's page: accept length and tau against step with
// their intervals, one line per suite dataset plus the macro mean.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "web/html.h"
#include "web/svg_plot.h"
#include "web/views.h"

namespace dflash::web {
namespace {

using json = nlohmann::json;
using types::JobRecord;
using types::JobState;

int64_t LastUpdate(const JobRecord& j) {
  return std::max({j.create_unix_micros, j.start_unix_micros, j.end_unix_micros});
}

json IntervalJson(const std::optional<types::Interval>& ci) {
  return ci ? json::array({ci->lo, ci->hi}) : json(nullptr);
}

// The accept-length and tau series of a run: the job's own (the macro mean
// for a suite) and, for suites, one per dataset.
struct RunSeries {
  std::vector<PlotSeries> accept, tau;
};

void AddPoint(std::map<std::string, PlotSeries>& by_name, const std::string& name, double step,
              double value, const std::optional<types::Interval>& ci, bool marked,
              const std::string& label) {
  PlotSeries& s = by_name[name];
  s.name = name;
  PlotPoint p;
  p.x = step;
  p.y = value;
  p.has_band = ci.has_value();
  if (ci) {
    p.lo = ci->lo;
    p.hi = ci->hi;
  }
  p.marked = marked;
  p.label = label;
  s.points.push_back(p);
}

RunSeries SeriesOf(const std::vector<JobRecord>& jobs) {
  std::map<std::string, PlotSeries> accept, tau;
  for (const JobRecord& j : jobs) {
    if (j.state != JobState::kSucceeded || !j.result) continue;
    const types::EvalResult& r = *j.result;
    const double step = static_cast<double>(j.request.step);
    const bool worse = r.gate && r.gate->verdict == "worse";
    const std::string main = r.suite.empty() ? "accept length" : "macro mean";
    const std::string label =
        absl::StrCat(j.id, " step ", j.request.step, worse ? " (gate: worse)" : "");
    AddPoint(accept, main, step, r.accept_length_pooled, r.accept_length_ci, worse, label);
    AddPoint(tau, r.suite.empty() ? "tau" : "macro mean", step, r.tau, r.tau_ci, worse, label);
    for (const types::DatasetResult& d : r.suite_results) {
      AddPoint(accept, d.dataset, step, d.result.accept_length_pooled, d.result.accept_length_ci,
               false, label);
      AddPoint(tau, d.dataset, step, d.result.tau, d.result.tau_ci, false, label);
    }
    // Sampled acceptance: one extra line per setting, on both charts.
    for (const types::SampledAcceptance& s : r.sampling) {
      const std::string name = absl::StrCat("expected at ", SettingText(s.setting));
      AddPoint(accept, name, step, s.expected_accept_length_pooled, s.accept_length_ci, false,
               label);
      AddPoint(tau, name, step, s.expected_tau, std::nullopt, false, label);
    }
  }
  RunSeries out;
  for (auto& [name, s] : accept) out.accept.push_back(std::move(s));
  for (auto& [name, s] : tau) out.tau.push_back(std::move(s));
  return out;
}

std::string JobLink(const JobRecord& j) {
  return Link(absl::StrCat("/jobs/", UrlEncode(j.id)), j.id);
}

}  // namespace

std::vector<RunSummary> SummarizeRuns(const std::vector<JobRecord>& jobs) {
  std::map<std::string, RunSummary> by_run;
  for (const JobRecord& j : jobs) {
    if (j.request.run.empty()) continue;
    RunSummary& s = by_run[j.request.run];
    s.run = j.request.run;
    ++s.jobs;
    s.running += j.state == JobState::kRunning ? 1 : 0;
    s.latest_step = std::max(s.latest_step, j.request.step);
    s.last_update_micros = std::max(s.last_update_micros, LastUpdate(j));
    if (j.state != JobState::kSucceeded || !j.result) continue;
    ++s.succeeded;
    // The best accept length; among equals, the earliest step that reached it.
    const double v = j.result->accept_length_pooled;
    if (s.best_step < 0 || v > s.best_accept_length ||
        (v == s.best_accept_length && j.request.step < s.best_step)) {
      s.best_step = j.request.step;
      s.best_accept_length = j.result->accept_length_pooled;
      s.best_job = j.id;
    }
  }
  std::vector<RunSummary> out;
  out.reserve(by_run.size());
  for (auto& [run, s] : by_run) out.push_back(std::move(s));
  return out;
}

WebPage RunsView(const std::vector<RunSummary>& runs) {
  WebPage page;
  page.json = json::array();
  std::vector<std::vector<std::string>> rows;
  for (const RunSummary& s : runs) {
    rows.push_back(
        {Link(absl::StrCat("/runs/", UrlEncode(s.run)), s.run), absl::StrCat(s.jobs),
         absl::StrCat(s.succeeded), absl::StrCat(s.running), absl::StrCat(s.latest_step),
         s.best_step < 0 ? "-" : absl::StrCat(s.best_step, " (", Num(s.best_accept_length), ")"),
         Time(s.last_update_micros)});
    page.json.push_back({{"run", s.run},
                         {"jobs", s.jobs},
                         {"succeeded", s.succeeded},
                         {"running", s.running},
                         {"latest_step", s.latest_step},
                         {"best_step", s.best_step < 0 ? json(nullptr) : json(s.best_step)},
                         {"best_accept_length", s.best_accept_length},
                         {"best_job", s.best_job},
                         {"last_update", Time(s.last_update_micros)}});
  }
  const std::string body =
      runs.empty() ? "<p class=\"note\">No runs yet: jobs submitted with --run appear here.</p>"
                   : Table({"run", "jobs", "succeeded", "running", "latest step",
                            "best step (accept length)", "last update"},
                           rows);
  page.html = PageShell("Runs", body, "/api/runs");
  return page;
}

WebPage RunView(const std::string& run, const std::vector<JobRecord>& jobs,
                std::optional<int64_t> step) {
  WebPage page;
  const RunSeries series = SeriesOf(jobs);
  std::string body = LinePlot("accept length by step (95% interval bands)", "step", series.accept);
  absl::StrAppend(&body, LinePlot("tau by step (95% interval bands)", "step", series.tau));
  const JobRecord* chosen = nullptr;
  for (const JobRecord& j : jobs) {
    if (j.state == JobState::kSucceeded && j.result && (!step || j.request.step == *step)) {
      chosen = &j;
    }
  }
  if (chosen) {
    std::vector<std::string> labels;
    std::vector<double> values;
    for (const types::PositionMetrics& p : chosen->result->positions) {
      labels.push_back(absl::StrCat(p.position));
      values.push_back(p.acceptance);
    }
    absl::StrAppend(&body, BarPlot(absl::StrCat("acceptance by position at step ",
                                                chosen->request.step, " (", chosen->id, ")"),
                                   labels, values));
  }
  std::vector<std::vector<std::string>> rows;
  json list = json::array();
  for (const JobRecord& j : jobs) {
    const types::EvalResult* r = j.result ? &*j.result : nullptr;
    const std::string gate = r && r->gate ? r->gate->verdict : "";
    rows.push_back({JobLink(j), absl::StrCat(j.request.step), types::JobStateName(j.state),
                    r ? WithInterval(r->accept_length_pooled, r->accept_length_ci) : "-",
                    r ? WithInterval(r->tau, r->tau_ci) : "-",
                    gate.empty()
                        ? ""
                        : absl::StrCat("<span class=\"", gate == "worse" ? "worse" : "pass", "\">",
                                       Escape(gate), "</span>"),
                    Escape(j.request.params.dataset)});
    json row = {{"id", j.id},
                {"step", j.request.step},
                {"state", types::JobStateName(j.state)},
                {"dataset", j.request.params.dataset}};
    if (r) {
      row["accept_length"] = r->accept_length_pooled;
      row["accept_length_ci"] = IntervalJson(r->accept_length_ci);
      row["tau"] = r->tau;
      row["tau_ci"] = IntervalJson(r->tau_ci);
      row["gate"] = gate.empty() ? json(nullptr) : json(gate);
      json per_dataset = json::object();
      for (const types::DatasetResult& d : r->suite_results) {
        per_dataset[d.dataset] = d.result.accept_length_pooled;
      }
      if (!per_dataset.empty()) row["suite_accept_length"] = per_dataset;
    }
    list.push_back(row);
  }
  absl::StrAppend(
      &body, "<h2>Jobs</h2>",
      Table({"job", "step", "state", "accept length [95%]", "tau [95%]", "gate", "dataset"}, rows));
  json series_names = json::array();
  for (const PlotSeries& s : series.accept) series_names.push_back(s.name);
  page.json = {{"run", run},
               {"jobs", list},
               {"series", series_names},
               {"chosen_job", chosen ? json(chosen->id) : json(nullptr)}};
  page.html =
      PageShell(absl::StrCat("Run ", run), body, absl::StrCat("/api/runs/", UrlEncode(run)));
  return page;
}

}  // namespace dflash::web
