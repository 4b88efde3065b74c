#include "client/format_jobs.h"

#include <time.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/format.h"
#include "client/text_bar.h"

namespace dflash::client {
namespace {

bool HasTime(const google::protobuf::Timestamp& ts) {
  return ts.seconds() != 0 || ts.nanos() != 0;
}

double Seconds(const google::protobuf::Timestamp& ts) {
  return ts.seconds() + ts.nanos() * 1e-9;
}

// Accuracy at position j (1-based), or NaN when the result has no such position.
double AccuracyAt(const pb::EvalResult& r, int j) {
  for (const pb::PositionMetrics& p : r.positions()) {
    if (p.position() == j) return p.accuracy();
  }
  return std::nan("");
}

double AcceptanceAt(const pb::EvalResult& r, int j) {
  for (const pb::PositionMetrics& p : r.positions()) {
    if (p.position() == j) return p.acceptance();
  }
  return std::nan("");
}

std::string Cell3(double v) {
  return std::isnan(v) ? "-" : absl::StrFormat("%.3f", v);
}
std::string Cell4(double v) {
  return std::isnan(v) ? "-" : absl::StrFormat("%.4f", v);
}

// "3.400 (+0.185)": the value and its difference from the first column.
std::string WithDiff(double v, double first, int precision, bool is_first) {
  if (std::isnan(v)) return "-";
  std::string s = absl::StrFormat("%.*f", precision, v);
  if (!is_first && !std::isnan(first))
    absl::StrAppend(&s, absl::StrFormat(" (%+.*f)", precision, v - first));
  return s;
}

// "[0.812, 0.845]", or "-" when the interval is absent.
std::string IntervalText(bool has, const pb::Interval& i) {
  return has ? absl::StrFormat("[%.4f, %.4f]", i.lo(), i.hi()) : std::string("-");
}

}  // namespace

std::string JobStateLabel(pb::JobState state) {
  switch (state) {
    case pb::JOB_STATE_QUEUED: return "QUEUED";
    case pb::JOB_STATE_RUNNING: return "RUNNING";
    case pb::JOB_STATE_SUCCEEDED: return "SUCCEEDED";
    case pb::JOB_STATE_FAILED: return "FAILED";
    case pb::JOB_STATE_CANCELLED: return "CANCELLED";
    case pb::JOB_STATE_INTERRUPTED: return "INTERRUPTED";
    default: return "UNSPECIFIED";
  }
}

std::string FormatTimestamp(const google::protobuf::Timestamp& ts) {
  if (!HasTime(ts)) return "-";
  const time_t t = static_cast<time_t>(ts.seconds());
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string DrafterLabel(const pb::EvalRequest& req) {
  if (!req.drafter().empty()) return req.drafter();
  std::string path = req.checkpoint_path();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string FormatProgressLine(const pb::EvalProgress& p, int bar_width) {
  const double fraction =
      p.blocks_total() > 0 ? static_cast<double>(p.blocks_done()) / p.blocks_total() : 0.0;
  // "<=" while the total is an upper bound (a replay walk still running).
  std::string s = absl::StrFormat(
      "[%s] %d/%s%d blocks %3d%%  elapsed %s", TextBar(fraction, bar_width), p.blocks_done(),
      p.blocks_total_is_upper_bound() ? "<=" : "", p.blocks_total(),
      static_cast<int>(std::floor(fraction * 100)), HumanSeconds(p.elapsed_seconds()));
  if (p.blocks_total() > 0 && p.blocks_done() < p.blocks_total() && p.eta_seconds() > 0) {
    absl::StrAppend(&s, "  ETA ", HumanSeconds(p.eta_seconds()));
  }
  return s;
}

std::string FormatJobOutcome(const pb::EvalJob& job) {
  std::string s = JobStateLabel(job.state());
  if (job.error_code() != 0) {
    absl::StrAppend(&s, ": ",
                    absl::StatusCodeToString(static_cast<absl::StatusCode>(job.error_code())));
  }
  if (!job.error_message().empty()) absl::StrAppend(&s, ": ", job.error_message());
  if (job.interrupted_by_restart()) {
    absl::StrAppend(&s, " (the server stopped while it ran; 'dflash-eval resubmit ", job.id(),
                    "' runs it again)");
  }
  return s;
}

std::string FormatJobStatus(const pb::EvalJob& job) {
  std::string out;
  auto row = [&out](absl::string_view key, absl::string_view value) {
    absl::StrAppend(&out, absl::StrFormat("  %-12s %s\n", key, value));
  };
  const pb::EvalRequest& req = job.request();
  absl::StrAppend(&out, "job ", job.id(), "  ", JobStateLabel(job.state()), "\n");
  row(req.drafter().empty() ? "checkpoint" : "drafter",
      req.drafter().empty() ? req.checkpoint_path() : req.drafter());
  row("dataset", req.dataset());
  if (!req.target().empty()) row("target", req.target());
  row("mode", req.mode() == pb::EVAL_MODE_REPLAY ? "replay" : "anchor");
  if (!req.run().empty() || req.step() != 0) {
    row("run / step", absl::StrCat(req.run().empty() ? "-" : req.run(), " / ", req.step()));
  }
  if (!req.labels().empty()) {
    std::vector<std::string> labels;
    for (const auto& [k, v] : req.labels()) labels.push_back(absl::StrCat(k, "=", v));
    std::sort(labels.begin(), labels.end());
    row("labels", absl::StrJoin(labels, ", "));
  }
  if (job.has_progress() && job.progress().blocks_total() > 0) {
    row("progress", FormatProgressLine(job.progress(), 20));
    if (job.progress().samples_total() > 0) {
      row("samples",
          absl::StrCat(job.progress().samples_done(), "/", job.progress().samples_total()));
    }
  }
  row("created", FormatTimestamp(job.create_time()));
  if (HasTime(job.start_time())) {
    row("started",
        absl::StrCat(FormatTimestamp(job.start_time()), "  (queued ",
                     HumanSeconds(Seconds(job.start_time()) - Seconds(job.create_time())), ")"));
  }
  if (HasTime(job.end_time())) {
    std::string ran;
    if (HasTime(job.start_time())) {
      ran = absl::StrCat("  (ran ",
                         HumanSeconds(Seconds(job.end_time()) - Seconds(job.start_time())), ")");
    }
    row("ended", FormatTimestamp(job.end_time()) + ran);
  }
  if (job.state() == pb::JOB_STATE_SUCCEEDED && job.has_result()) {
    row("result", absl::StrFormat("accept length %.3f, tau %.3f over %d block(s)",
                                  job.result().accept_length_pooled(), job.result().tau(),
                                  job.result().blocks()));
    // Where its samples ran (issue 30): one row per shard.
    const std::string shards = FormatShards(job.result());
    if (!shards.empty()) {
      std::vector<std::string> lines = absl::StrSplit(shards, '\n', absl::SkipEmpty());
      for (size_t i = 1; i < lines.size(); ++i) {
        row(i == 1 ? "shards" : "", std::string(absl::StripLeadingAsciiWhitespace(lines[i])));
      }
    }
  }
  if (job.has_recipe()) {
    std::vector<std::string> fields;
    for (const pb::RecipeField& f : job.recipe().fields()) {
      fields.push_back(absl::StrCat(f.name(), " ", f.value()));
    }
    row("recipe", absl::StrCat(job.recipe().fingerprint(), ": ", absl::StrJoin(fields, "; ")));
  }
  if (job.error_code() != 0 || !job.error_message().empty() || job.interrupted_by_restart()) {
    row("error", FormatJobOutcome(job));
  }
  if (!job.resubmitted_from().empty()) row("resubmitted", "from " + job.resubmitted_from());
  // Fleet jobs: where the job runs (or may run) and each run of it.
  if (!job.server().empty()) row("ran on", job.server());
  if (!job.placement().empty()) row("placement", job.placement());
  for (int i = 0; i < job.attempts_size(); ++i) {
    const pb::EvalAttempt& a = job.attempts(i);
    row(i == 0 ? "attempts" : "",
        absl::StrCat(i + 1, ". ", a.server(), " from ", FormatTimestamp(a.start_time()), " to ",
                     FormatTimestamp(a.end_time()), ": ",
                     a.outcome().empty() ? "running" : a.outcome()));
  }
  if (!job.server_version().empty()) row("server", job.server_version());
  return out;
}

std::string FormatJobList(const pb::ListEvalsResponse& list) {
  if (list.jobs().empty()) return "no evaluations\n";
  size_t id_width = 2;
  for (const pb::EvalJob& j : list.jobs()) id_width = std::max(id_width, j.id().size());
  std::string out = absl::StrFormat("%-*s ", id_width, "ID");
  absl::StrAppend(&out, absl::StrFormat("%-11s %-20s %-12s %-12s %8s %8s  %s\n", "STATE", "DRAFTER",
                                        "DATASET", "RUN", "STEP", "ACCEPT", "CREATED"));
  for (const pb::EvalJob& j : list.jobs()) {
    const bool done = j.state() == pb::JOB_STATE_SUCCEEDED && j.has_result();
    std::string step = j.request().run().empty() && j.request().step() == 0
                           ? "-"
                           : absl::StrCat(j.request().step());
    absl::StrAppend(&out, absl::StrFormat("%-*s ", id_width, j.id()));
    absl::StrAppend(
        &out,
        absl::StrFormat("%-11s %-20s %-12s %-12s %8s %8s  %s\n", JobStateLabel(j.state()),
                        DrafterLabel(j.request()), j.request().dataset(),
                        j.request().run().empty() ? "-" : j.request().run(), step,
                        done ? absl::StrFormat("%.3f", j.result().accept_length_pooled()) : "-",
                        FormatTimestamp(j.create_time())));
  }
  if (!list.next_page_token().empty()) {
    absl::StrAppend(&out, "more: --page-token ", list.next_page_token(), "\n");
  }
  return out;
}

std::string FormatComparison(const pb::CompareEvalsResponse& cmp) {
  const auto& jobs = cmp.jobs();
  if (jobs.empty()) return "nothing to compare\n";
  size_t width = 16;
  for (const pb::EvalJob& j : jobs) width = std::max(width, j.id().size() + 2);
  width = std::max<size_t>(width, 18);  // "0.8123 (+0.0177)"
  std::string out;
  auto row = [&](absl::string_view key, const std::vector<std::string>& cells) {
    std::string line = absl::StrFormat("%-16s", key);
    for (const std::string& c : cells) absl::StrAppend(&line, absl::StrFormat(" %-*s", width, c));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  };
  auto cells = [&](auto fn) {
    std::vector<std::string> v;
    for (const pb::EvalJob& j : jobs) v.push_back(fn(j));
    return v;
  };
  row("job", cells([](const pb::EvalJob& j) { return j.id(); }));
  row("drafter", cells([](const pb::EvalJob& j) { return DrafterLabel(j.request()); }));
  row("dataset", cells([](const pb::EvalJob& j) { return j.request().dataset(); }));
  row("recipe", cells([](const pb::EvalJob& j) { return j.recipe().fingerprint(); }));
  row("mode", cells([](const pb::EvalJob& j) {
        return absl::StrCat(j.result().mode() == pb::EVAL_MODE_REPLAY ? "replay" : "anchor",
                            ", B=", j.result().block_size());
      }));
  row("semantics", cells([](const pb::EvalJob& j) {
        return absl::StrCat(j.result().family().empty() ? "DFlash 1" : j.result().family(), ", ",
                            j.result().semantics().empty() ? "zlab-2025" : j.result().semantics());
      }));
  row("blocks", cells([](const pb::EvalJob& j) { return absl::StrCat(j.result().blocks()); }));
  const double first_al = jobs[0].result().accept_length_pooled();
  const double first_tau = jobs[0].result().tau();
  int i = 0;
  row("accept length", cells([&](const pb::EvalJob& j) {
        return WithDiff(j.result().accept_length_pooled(), first_al, 3, i++ == 0);
      }));
  i = 0;
  row("tau", cells([&](const pb::EvalJob& j) {
        return WithDiff(j.result().tau(), first_tau, 3, i++ == 0);
      }));
  bool any_selector = false;
  for (const pb::EvalJob& j : jobs) any_selector |= j.result().selector_top_k() > 0;
  if (any_selector) {  // DFlash 2: did the selector help, and how far from the oracle?
    const auto selector_cell = [](const pb::EvalJob& j, double v) {
      return j.result().selector_top_k() > 0 ? absl::StrFormat("%.3f", v) : std::string("-");
    };
    row("  without selector", cells([&](const pb::EvalJob& j) {
          return selector_cell(j, j.result().unary_accept_length_pooled());
        }));
    row("  top-k oracle", cells([&](const pb::EvalJob& j) {
          return selector_cell(j, j.result().oracle_accept_length_pooled());
        }));
  }
  int max_pos = 0;
  for (const pb::EvalJob& j : jobs) {
    for (const pb::PositionMetrics& p : j.result().positions())
      max_pos = std::max(max_pos, p.position());
  }
  absl::StrAppend(&out, "accuracy by position (difference from the first job)\n");
  for (int pos = 1; pos <= max_pos; ++pos) {
    const double first = AccuracyAt(jobs[0].result(), pos);
    i = 0;
    row(absl::StrCat("  pos ", pos), cells([&](const pb::EvalJob& j) {
          return WithDiff(AccuracyAt(j.result(), pos), first, 4, i++ == 0);
        }));
  }
  absl::StrAppend(&out, FormatDifferences(cmp));
  for (const std::string& w : cmp.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

std::string FormatIntervalLine(const pb::EvalResult& r) {
  if (r.ci_resamples() <= 0) return "";
  return absl::StrFormat(
      "95%% intervals (percentile bootstrap over samples, %d resamples): accept length %s   tau "
      "%s\n",
      r.ci_resamples(), IntervalText(r.has_accept_length_ci(), r.accept_length_ci()),
      IntervalText(r.has_tau_ci(), r.tau_ci()));
}

std::string FormatIntervals(const pb::EvalResult& r) {
  std::string out;
  if (r.ci_resamples() > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("95%% intervals (percentile bootstrap over samples, %d resamples):\n"
                              "  accept length %s   tau %s\n",
                              r.ci_resamples(),
                              IntervalText(r.has_accept_length_ci(), r.accept_length_ci()),
                              IntervalText(r.has_tau_ci(), r.tau_ci())));
    absl::StrAppend(&out, absl::StrFormat("  %4s %-17s %-17s %-17s\n", "pos", "accuracy",
                                          "acceptance", "conditional"));
    for (const pb::PositionMetrics& p : r.positions()) {
      absl::StrAppend(&out,
                      absl::StrFormat("  %4d %-17s %-17s %-17s\n", p.position(),
                                      IntervalText(p.has_accuracy_ci(), p.accuracy_ci()),
                                      IntervalText(p.has_acceptance_ci(), p.acceptance_ci()),
                                      IntervalText(p.has_conditional_ci(), p.conditional_ci())));
    }
  }
  if (r.has_gate()) absl::StrAppend(&out, r.gate().text(), "\n");
  return out;
}

std::string FormatSuiteResult(const pb::EvalResult& r) {
  std::string out = absl::StrFormat(
      "suite %s: %d datasets, %s mode, block size %d (macro average = unweighted mean over "
      "datasets)\n",
      r.suite(), r.suite_results_size(), r.mode() == pb::EVAL_MODE_REPLAY ? "replay" : "anchor",
      r.block_size());
  absl::StrAppend(&out, absl::StrFormat("  %-16s %8s %8s %-26s %-26s %8s %8s %8s\n", "dataset",
                                        "samples", "blocks", "accept length [95%]", "tau [95%]",
                                        "accept@1", "accept@2", "accept@3"));
  const auto row = [&](const std::string& name, const pb::EvalResult& x) {
    const auto cell = [](double v, bool has, const pb::Interval& i) {
      return has ? absl::StrFormat("%.3f [%.3f, %.3f]", v, i.lo(), i.hi())
                 : absl::StrFormat("%.3f", v);
    };
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  %-16s %8d %8d %-26s %-26s %8s %8s %8s\n", name, x.samples(), x.blocks(),
                  cell(x.accept_length_pooled(), x.has_accept_length_ci(), x.accept_length_ci()),
                  cell(x.tau(), x.has_tau_ci(), x.tau_ci()), Cell4(AcceptanceAt(x, 1)),
                  Cell4(AcceptanceAt(x, 2)), Cell4(AcceptanceAt(x, 3))));
  };
  for (const pb::DatasetResult& d : r.suite_results()) row(d.dataset(), d.result());
  row("macro average", r);
  for (const std::string& w : r.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

std::string FormatDifferences(const pb::CompareEvalsResponse& cmp) {
  if (cmp.differences().empty()) return "";
  std::string out = absl::StrFormat(
      "paired differences against %s (95%% paired bootstrap over the shared samples)\n",
      cmp.jobs(0).id());
  int width = 14;
  for (const pb::EvalJob& j : cmp.jobs()) width = std::max(width, static_cast<int>(j.id().size()));
  absl::StrAppend(&out, absl::StrFormat("  %-16s %-*s %9s %-19s %s\n", "metric", width, "job",
                                        "delta", "95% interval", "verdict"));
  for (const pb::MetricDifference& d : cmp.differences()) {
    const std::string job = d.job_index() < cmp.jobs_size() ? cmp.jobs(d.job_index()).id() : "?";
    // NaN: the metric has no denominator in one of the jobs ("undefined").
    const std::string delta =
        std::isnan(d.delta()) ? std::string("-") : absl::StrFormat("%+.4f", d.delta());
    absl::StrAppend(&out,
                    absl::StrFormat("  %-16s %-*s %9s %-19s %s\n", d.metric(), width, job, delta,
                                    IntervalText(d.has_delta_ci(), d.delta_ci()), d.verdict()));
  }
  return out;
}

std::string FormatHistory(const std::string& run, const std::vector<pb::EvalJob>& jobs) {
  if (jobs.empty()) return absl::StrCat("no finished evaluations for run '", run, "'\n");
  std::string out = absl::StrFormat("run %s: %d evaluation(s)\n", run, jobs.size());
  absl::StrAppend(&out,
                  absl::StrFormat("%10s %10s %7s %7s %7s %7s %7s  %-12s %s\n", "STEP", "ACCEPT LEN",
                                  "TAU", "ACC@1", "ACC@2", "ACC@3", "ACC@4", "DATASET", "JOB"));
  const auto row = [&](const pb::EvalJob& j, const pb::EvalResult& r, const std::string& dataset) {
    absl::StrAppend(
        &out, absl::StrFormat("%10d %10s %7s %7s %7s %7s %7s  %-12s %s\n", j.request().step(),
                              Cell3(r.accept_length_pooled()), Cell3(r.tau()),
                              Cell4(AccuracyAt(r, 1)), Cell4(AccuracyAt(r, 2)),
                              Cell4(AccuracyAt(r, 3)), Cell4(AccuracyAt(r, 4)), dataset, j.id()));
  };
  for (const pb::EvalJob& j : jobs) {
    // A suite job: one row per dataset (one curve each), then its macro average.
    for (const pb::DatasetResult& d : j.result().suite_results()) row(j, d.result(), d.dataset());
    row(j, j.result(), j.result().suite_results_size() > 0 ? "macro avg" : j.request().dataset());
    absl::StrAppend(&out, FormatCalibrations(j));
  }
  return out;
}

std::string FormatCalibrations(const pb::EvalJob& job) {
  std::string out;
  for (const pb::Calibration& c : job.calibrations()) {
    absl::StrAppend(
        &out, absl::StrFormat("%10s served (%s, %s-weighted) %.3f vs predicted %.3f "
                              "(%s): ratio %.3f, %s\n",
                              "", c.source(), c.weighting(), c.served_accept_length(),
                              c.predicted_accept_length(), c.curve(), c.ratio(), c.verdict()));
  }
  return out;
}

}  // namespace dflash::client
