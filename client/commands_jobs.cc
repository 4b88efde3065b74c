// Job commands: status, results, list, cancel, resubmit, compare, history.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/format.h"
#include "client/format_jobs.h"
#include "client/svg_chart.h"

namespace dflash::client {
namespace {

const std::vector<std::string> kStates = {"queued", "running",   "succeeded",
                                          "failed", "cancelled", "interrupted"};

pb::JobState ParseState(const std::string& s) {
  pb::JobState state = pb::JOB_STATE_UNSPECIFIED;
  pb::JobState_Parse("JOB_STATE_" + absl::AsciiStrToUpper(s), &state);
  return state;
}

// Writes the chart and says where; an unwritable file is exit 1.
int WriteSvg(CliContext& cx, const std::string& path, const std::string& svg) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << svg;
  if (!f || !f.flush()) {
    cx.err << "dflash-eval: cannot write '" << path << "': " << std::strerror(errno) << "\n";
    return kExitRpcError;
  }
  (cx.g.json ? cx.err : cx.out) << "chart written to " << path << "\n";
  return kExitOk;
}

void AddStatusAndResults(CliContext& ctx) {
  struct State {
    std::string status_id, results_id, progress = "auto";
    bool wait = false;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* status = ctx.app.add_subcommand("status", "a job's state, progress, timings and error");
  status->add_option("job", st->status_id, "job id")->required();
  status->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto job = c.GetEval(st->status_id);
      if (!job.ok()) return ReportStatus(job.status(), cx->err);
      cx->Print(*job, FormatJobStatus(*job));
      return kExitOk;
    };
  });

  CLI::App* results =
      ctx.app.add_subcommand("results", "a finished job's result (accept length, positions)");
  results->add_option("job", st->results_id, "job id")->required();
  results->add_flag("--wait", st->wait, "wait for the job to end (with progress) first");
  results->add_option("--progress", st->progress, "with --wait: auto, bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
  results->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto job = c.GetEval(st->results_id);
      if (!job.ok()) return ReportStatus(job.status(), cx->err);
      if (st->wait) return WaitAndPrintResult(*cx, c, *job, st->progress);
      if (job->state() == pb::JOB_STATE_SUCCEEDED) {
        std::string human = FormatEvalResult(job->result(), cx->g.detail);
        if (job->calibrations_size() > 0) {
          absl::StrAppend(&human, "calibrations (served counters against this job)\n",
                          FormatCalibrations(*job));
        }
        cx->Print(job->result(), human);
        return kExitOk;
      }
      if (IsFinalState(job->state())) {
        return ReportStatus(absl::FailedPreconditionError(absl::StrCat(
                                "job ", job->id(), " has no results: ", FormatJobOutcome(*job))),
                            cx->err);
      }
      std::string where = JobStateLabel(job->state());
      if (job->progress().blocks_total() > 0) {
        absl::StrAppend(&where, ", ", job->progress().blocks_done(), "/",
                        job->progress().blocks_total_is_upper_bound() ? "<=" : "",
                        job->progress().blocks_total(), " blocks");
      }
      return ReportStatus(absl::FailedPreconditionError(absl::StrCat(
                              "job ", job->id(), " is ", where,
                              "; its results exist once it has succeeded (or: dflash-eval results ",
                              job->id(), " --wait)")),
                          cx->err);
    };
  });
}

void AddList(CliContext& ctx) {
  struct State {
    pb::ListEvalsRequest req;
    std::string state;
    int limit = 0;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand("list", "evaluation jobs, newest first");
  cmd->add_option("--run", *st->req.mutable_run(), "only this training run");
  cmd->add_option("--state", st->state,
                  "queued, running, succeeded, failed, cancelled or interrupted")
      ->check(CLI::IsMember(kStates));
  cmd->add_option("--drafter", *st->req.mutable_drafter(), "only this drafter");
  cmd->add_option("--dataset", *st->req.mutable_dataset(), "only this dataset");
  cmd->add_option("--suite", *st->req.mutable_suite(),
                  "only suite jobs of this suite (as given: 'a,b,c' or a configured name)");
  cmd->add_option("--limit", st->limit, "at most N jobs per page (default: the server's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--page-token", *st->req.mutable_page_token(),
                  "the next page, as a previous list printed");
  cmd->callback([cx, st] {
    st->req.set_state(ParseState(st->state));
    st->req.set_page_size(st->limit);
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.ListEvals(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatJobList(*resp));
      return kExitOk;
    };
  });
}

void AddCancelAndResubmit(CliContext& ctx) {
  struct State {
    std::string cancel_id, resubmit_id;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cancel = ctx.app.add_subcommand("cancel", "cancel a queued or running job");
  cancel->add_option("job", st->cancel_id, "job id")->required();
  cancel->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto job = c.CancelEval(st->cancel_id);
      if (!job.ok()) return ReportStatus(job.status(), cx->err);
      std::string human =
          IsFinalState(job->state())
              ? absl::StrCat("job ", job->id(), " ", JobStateLabel(job->state()), "\n")
              : absl::StrCat("job ", job->id(), " cancelling: it is ", JobStateLabel(job->state()),
                             " and stops at the next chunk boundary\n");
      cx->Print(*job, human);
      return kExitOk;
    };
  });
  CLI::App* resubmit = ctx.app.add_subcommand(
      "resubmit", "run a finished (e.g. INTERRUPTED) job's request again as a new job");
  resubmit->add_option("job", st->resubmit_id, "job id")->required();
  resubmit->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto job = c.ResubmitEval(st->resubmit_id);
      if (!job.ok()) return ReportStatus(job.status(), cx->err);
      cx->Print(*job, absl::StrCat(job->id(), "\n"));
      return kExitOk;
    };
  });
}

void AddCompare(CliContext& ctx) {
  struct State {
    std::vector<std::string> ids;
    std::string svg;
    bool require_paired = false;
    bool allow_recipe_mismatch = false;
    int64_t resamples = 0;
    uint64_t seed = 0;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand("compare", "finished jobs side by side, with differences");
  cmd->add_option("jobs", st->ids, "two or more job ids")->required()->expected(2, 1 << 20);
  cmd->add_option("--svg", st->svg, "also write per-position accuracy curves to FILE (SVG)");
  cmd->add_flag("--require-paired", st->require_paired,
                "fail when the jobs' samples cannot be paired (else a warning)");
  cmd->add_flag("--allow-recipe-mismatch", st->allow_recipe_mismatch,
                "compare jobs whose recipes differ (each difference a warning; else an error)");
  cmd->add_option("--ci-resamples", st->resamples, "paired bootstrap resamples (0 = 1000)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  cmd->add_option("--ci-seed", st->seed, "paired bootstrap seed");
  cmd->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      pb::CompareEvalsRequest req;
      for (const std::string& id : st->ids) req.add_ids(id);
      req.set_require_paired(st->require_paired);
      req.set_allow_recipe_mismatch(st->allow_recipe_mismatch);
      req.set_ci_resamples(static_cast<int32_t>(st->resamples));
      req.set_ci_seed(st->seed);
      auto resp = c.CompareEvals(req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatComparison(*resp));
      if (st->svg.empty()) return kExitOk;
      LineChart chart;
      chart.title = "Draft accuracy by block position";
      chart.x_label = "position in block (j)";
      chart.y_label = "accuracy";
      chart.y_min = 0;
      chart.y_max = 1;
      chart.integer_x = true;
      for (const pb::EvalJob& j : resp->jobs()) {
        ChartSeries s{absl::StrCat(DrafterLabel(j.request()), " (", j.id(), ")"), {}};
        for (const pb::PositionMetrics& p : j.result().positions()) {
          s.points.push_back({static_cast<double>(p.position()), p.accuracy()});
        }
        chart.series.push_back(std::move(s));
        if (j.result().selector_top_k() == 0) continue;
        // DFlash 2: the same drafter without its selector, and the top-k coverage.
        ChartSeries unary{absl::StrCat(DrafterLabel(j.request()), " without selector"), {}};
        ChartSeries cover{
            absl::StrCat(DrafterLabel(j.request()), " coverage@", j.result().selector_top_k()), {}};
        for (const pb::PositionMetrics& p : j.result().positions()) {
          unary.points.push_back({static_cast<double>(p.position()), p.unary_accuracy()});
          cover.points.push_back({static_cast<double>(p.position()), p.coverage()});
        }
        chart.series.push_back(std::move(unary));
        chart.series.push_back(std::move(cover));
      }
      return WriteSvg(*cx, st->svg, RenderLineChart(chart));
    };
  });
}

// Every succeeded job of a run, all pages, ordered by step (then age).
absl::StatusOr<std::vector<pb::EvalJob>> RunHistory(EvalClient& c, pb::ListEvalsRequest req) {
  std::vector<pb::EvalJob> jobs;
  req.set_state(pb::JOB_STATE_SUCCEEDED);
  req.set_order_by_step(true);
  for (int page = 0; page < 1000; ++page) {
    auto resp = c.ListEvals(req);
    if (!resp.ok()) return resp.status();
    jobs.insert(jobs.end(), resp->jobs().begin(), resp->jobs().end());
    if (resp->next_page_token().empty()) break;
    req.set_page_token(resp->next_page_token());
  }
  auto at = [](const pb::EvalJob& j) {
    return std::make_pair(j.create_time().seconds(), j.create_time().nanos());
  };
  std::stable_sort(jobs.begin(), jobs.end(), [&](const pb::EvalJob& a, const pb::EvalJob& b) {
    if (a.request().step() != b.request().step()) return a.request().step() < b.request().step();
    return at(a) < at(b);
  });
  return jobs;
}

void AddHistory(CliContext& ctx) {
  struct State {
    pb::ListEvalsRequest req;
    std::string svg;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd =
      ctx.app.add_subcommand("history", "a training run's curve: step vs accept length");
  cmd->add_option("--run", *st->req.mutable_run(), "training run")->required();
  cmd->add_option("--dataset", *st->req.mutable_dataset(), "only evaluations on this dataset");
  cmd->add_option("--svg", st->svg, "also write accept length against step to FILE (SVG)");
  cmd->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto jobs = RunHistory(c, st->req);
      if (!jobs.ok()) return ReportStatus(jobs.status(), cx->err);
      pb::ListEvalsResponse as_list;
      for (const pb::EvalJob& j : *jobs) *as_list.add_jobs() = j;
      cx->Print(as_list, FormatHistory(st->req.run(), *jobs));
      if (st->svg.empty()) return kExitOk;
      LineChart chart;
      chart.title = absl::StrCat("Accept length over training: ", st->req.run());
      chart.x_label = "training step";
      chart.y_label = "accept length (pooled, incl. bonus token)";
      chart.integer_x = true;
      // One curve per dataset (a suite job adds a point to each of its
      // datasets' curves); one point per step: the newest evaluation of it.
      std::vector<ChartSeries> curves;
      const auto add = [&](const std::string& dataset, double x, double y) {
        auto it = std::find_if(curves.begin(), curves.end(),
                               [&](const ChartSeries& c) { return c.name == dataset; });
        if (it == curves.end()) it = curves.insert(curves.end(), ChartSeries{dataset, {}});
        if (!it->points.empty() && it->points.back().first == x) {
          it->points.back().second = y;
        } else {
          it->points.push_back({x, y});
        }
      };
      for (const pb::EvalJob& j : *jobs) {
        const double x = static_cast<double>(j.request().step());
        if (j.result().suite_results_size() == 0) {
          add(j.request().dataset(), x, j.result().accept_length_pooled());
        }
        for (const pb::DatasetResult& d : j.result().suite_results()) {
          add(d.dataset(), x, d.result().accept_length_pooled());
        }
      }
      // One dataset: the curve is named after the run, as before suites.
      if (curves.size() == 1) curves[0].name = st->req.run();
      for (ChartSeries& s : curves) chart.series.push_back(std::move(s));
      return WriteSvg(*cx, st->svg, RenderLineChart(chart));
    };
  });
}

}  // namespace

void AddJobCommands(CliContext& ctx) {
  AddStatusAndResults(ctx);
  AddList(ctx);
  AddCancelAndResubmit(ctx);
  AddCompare(ctx);
  AddHistory(ctx);
}

}  // namespace dflash::client
