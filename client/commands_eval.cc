// `eval`: submit an evaluation job and (by default) wait for it, drawing its
// progress; `--detach` returns the job id at once; `--sync` is the older
// synchronous RunEval call.
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/format.h"
#include "client/format_decision.h"
#include "client/format_jobs.h"
#include "client/progress.h"
#include "dflash/eval/v1/label_key.h"

namespace dflash::client {
namespace {

struct EvalState {
  pb::EvalRequest req;
  std::string mode = "anchor", anchors = "even", progress = "auto";
  int64_t max_samples = 0, max_blocks = 0, block_size = 0, max_new_tokens = 0, step = 0;
  uint64_t seed = 0;
  std::vector<std::string> labels;
  std::vector<std::string> sampling;  // --sampling specs
  std::vector<std::string> policies;  // --policy names
  bool detach = false, sync = false;
  bool full_positions = false;
  std::string ci = "bootstrap";
  int64_t ci_resamples = 0;
  int64_t shards = 0;
  double min_delta = 0;
  bool allow_recipe_mismatch = false;
  std::optional<double> gate_floor;
};

// Exit status of a gated eval whose new checkpoint is significantly worse.
constexpr int kExitGateWorse = 4;

// Only the command line is checked here, after parsing: flag syntax and
// combinations that are about this program (--sync, --detach). The
// request's rules (drafter or checkpoint, a dataset, sampling, gate) are the
// server's (core/request_check.h): its answer is what the user sees.
void CheckAndFill(EvalState& st) {
  pb::EvalRequest& req = st.req;
  const bool has_ckpt = !req.checkpoint_path().empty();
  if (st.sync && !(req.dataset_path().empty() && req.target_path().empty())) {
    throw UsageError{
        "eval: --dataset-path and --target-path name objects a fleet's job loads; "
        "drop --sync"};
  }
  if (st.detach && st.sync) {
    throw UsageError{
        "eval: give --detach or --sync, not both (--sync runs the evaluation "
        "inside this call)"};
  }
  if (req.unload_after() && !has_ckpt) {
    throw UsageError{
        "eval: --unload-after applies to --checkpoint PATH only (a resident "
        "drafter stays until 'dflash-eval unload drafter NAME')"};
  }
  for (const std::string& spec : st.sampling) {
    auto parsed = ParseSamplingSpec(spec);
    if (!parsed.ok()) throw UsageError{std::string(parsed.status().message())};
    *req.add_sampling() = *parsed;
  }
  for (const std::string& p : st.policies) req.add_policies(p);
  for (const std::string& label : st.labels) {
    const auto eq = label.find('=');
    const std::string key = label.substr(0, eq);
    if (eq == std::string::npos || !pb::IsValidLabelKey(key)) {
      throw UsageError{absl::StrCat(
          "eval: --label '", label,
          "' is not KEY=VALUE with KEY of letters, digits, '_', '-', '.', '/' (at most 63)")};
    }
    if (req.labels().count(key) > 0) {
      throw UsageError{absl::StrCat("eval: --label '", key, "' given twice")};
    }
    (*req.mutable_labels())[key] = label.substr(eq + 1);
  }
  req.set_mode(st.mode == "replay" ? pb::EVAL_MODE_REPLAY : pb::EVAL_MODE_ANCHOR);
  req.set_anchors(st.anchors == "random" ? pb::ANCHOR_STRATEGY_RANDOM
                  : st.anchors == "all"  ? pb::ANCHOR_STRATEGY_ALL
                                         : pb::ANCHOR_STRATEGY_EVEN);
  req.set_max_samples(static_cast<int32_t>(st.max_samples));
  req.set_max_blocks(static_cast<int32_t>(st.max_blocks));
  req.set_seed(st.seed);
  req.set_block_size(static_cast<int32_t>(st.block_size));
  req.set_max_new_tokens(static_cast<int32_t>(st.max_new_tokens));
  req.set_step(st.step);
  req.set_full_positions(st.full_positions);
  if (st.ci == "none") req.set_ci("none");
  req.set_ci_resamples(static_cast<int32_t>(st.ci_resamples));
  req.set_shards(static_cast<int32_t>(st.shards));
  req.set_gate_min_delta(st.min_delta);
  req.set_gate_allow_recipe_mismatch(st.allow_recipe_mismatch);
  if (st.gate_floor) req.set_gate_floor(*st.gate_floor);
  if (!req.gate().empty() && (st.detach || st.sync)) {
    throw UsageError{"eval: --gate waits for the job's verdict; drop --detach/--sync"};
  }
}

int RunSync(CliContext& cx, const EvalState& st, EvalClient& c) {
  pb::RunEvalRequest req;
  *req.mutable_request() = st.req;
  auto resp = c.RunEval(req);
  if (!resp.ok()) return ReportStatus(resp.status(), cx.err);
  cx.Print(*resp, FormatEvalResult(*resp, cx.g.detail));
  return kExitOk;
}

int SubmitAndWait(CliContext& cx, const EvalState& st, EvalClient& c) {
  pb::SubmitEvalRequest req;
  *req.mutable_request() = st.req;
  auto job = c.SubmitEval(req);
  if (!job.ok() && job.status().code() == absl::StatusCode::kUnimplemented && !st.detach) {
    // A server from before the job service: the same evaluation, synchronously.
    cx.err << "dflash-eval: the server has no job service (SubmitEval is unimplemented); "
              "running the evaluation synchronously\n";
    return RunSync(cx, st, c);
  }
  if (!job.ok()) return ReportStatus(job.status(), cx.err);
  if (st.detach) {
    cx.Print(*job, job->id() + "\n");
    return kExitOk;
  }
  // The id first: a user who interrupts the wait can still find the job.
  // With --json stdout holds only the result, so the id goes to stderr.
  (cx.g.json ? cx.err : cx.out) << "job " << job->id() << "\n" << std::flush;
  return WaitAndPrintResult(cx, c, *job, st.progress);
}

}  // namespace

int WaitAndPrintResult(CliContext& cx, EvalClient& c, const pb::EvalJob& job,
                       const std::string& progress) {
  // Progress goes where it does not spoil the result: stdout for people,
  // stderr (and only on a terminal) with --json.
  std::ostream& pout = cx.g.json ? cx.err : cx.out;
  const bool tty = cx.g.json ? isatty(STDERR_FILENO) == 1 : cx.out_is_tty;
  ProgressPrinter::Mode mode = tty         ? ProgressPrinter::Mode::kBar
                               : cx.g.json ? ProgressPrinter::Mode::kNone
                                           : ProgressPrinter::Mode::kLines;
  if (progress == "bar") mode = ProgressPrinter::Mode::kBar;
  if (progress == "lines") mode = ProgressPrinter::Mode::kLines;
  if (progress == "none") mode = ProgressPrinter::Mode::kNone;
  ProgressPrinter printer(pout, mode);
  printer.Update(job);
  absl::StatusOr<pb::EvalJob> final_job = job;
  if (!IsFinalState(job.state())) {
    final_job = c.WatchEval(job.id(), [&](const pb::EvalJob& j) { printer.Update(j); });
  }
  if (!final_job.ok()) {
    printer.Finish(job);
    const int code = ReportStatus(final_job.status(), cx.err);
    cx.err << "dflash-eval: job " << job.id() << " may still be running; see 'dflash-eval status "
           << job.id() << "'\n";
    return code;
  }
  printer.Finish(*final_job);
  if (final_job->state() != pb::JOB_STATE_SUCCEEDED) {
    cx.err << "dflash-eval: job " << final_job->id() << " " << FormatJobOutcome(*final_job) << "\n";
    return kExitRpcError;
  }
  cx.Print(final_job->result(), FormatEvalResult(final_job->result(), cx.g.detail));
  if (final_job->result().has_gate()) {
    const pb::GateVerdict& g = final_job->result().gate();
    if (cx.g.json) cx.err << g.text() << "\n";  // the verdict line also reaches a script's log
    if (g.verdict() == "worse") return kExitGateWorse;
    if (g.verdict() == "error") return kExitRpcError;
  }
  return kExitOk;
}

namespace {

// The objects evaluated: drafter (or checkpoint), dataset and target.
void AddObjectOptions(CLI::App* cmd, EvalState* st) {
  cmd->add_option("--drafter", *st->req.mutable_drafter(), "resident drafter name");
  cmd->add_option("--checkpoint", *st->req.mutable_checkpoint_path(),
                  "checkpoint path to load for this evaluation (instead of --drafter)");
  cmd->add_option("--dataset", *st->req.mutable_dataset(), "resident dataset name");
  cmd->add_option("--target", *st->req.mutable_target(), "resident target (default: the only one)");
  cmd->add_option("--dataset-path", *st->req.mutable_dataset_path(),
                  "fleet: the dataset's absolute path; a server lacking it loads it");
  cmd->add_option("--target-path", *st->req.mutable_target_path(),
                  "fleet: the target's absolute path; a server lacking it loads it");
}

// How blocks are chosen and scored: mode, anchors, limits, semantics,
// metrics, and sampled acceptance.
void AddScoringOptions(CLI::App* cmd, EvalState* st) {
  cmd->add_option("--mode", st->mode, "anchor or replay")
      ->check(CLI::IsMember({"anchor", "replay"}))
      ->capture_default_str();
  cmd->add_option("--anchors", st->anchors, "anchor mode: even, random or all")
      ->check(CLI::IsMember({"even", "random", "all"}))
      ->capture_default_str();
  cmd->add_option("--max-samples", st->max_samples, "0 = all")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-blocks", st->max_blocks, "per sample; 0 = no limit")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", st->seed, "seed for --anchors random");
  cmd->add_option("--block-size", st->block_size, "0 = the drafter's")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-new-tokens", st->max_new_tokens, "replay: 0 = no limit")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--semantics", *st->req.mutable_semantics(),
                  "zlab-current (default: z-lab's model.py at 10129599) or zlab-2025 (the older "
                  "rules)")
      ->check(CLI::IsMember({"zlab-current", "zlab-2025"}));
  cmd->add_option("--metrics", *st->req.mutable_metrics(),
                  "all (default) or acceptance: accept length, tau, histogram and acceptance "
                  "rates only (anchor mode then scores each block to its first miss, no cross "
                  "entropy)")
      ->check(CLI::IsMember({"all", "acceptance"}));
  cmd->add_flag("--full-positions", st->full_positions,
                "score every draft position, also past each block's first miss (replay, and "
                "--metrics acceptance), for the per-position accuracy; slower");
  cmd->add_option("--sampling", st->sampling,
                  "anchor mode: also expected acceptance under sampling t=TEMP[,p=TOP_P][,k=TOP_K] "
                  "(repeatable; one forward for all; needs the dataset's final hidden state)");
  cmd->add_option("--policy", st->policies,
                  "with --sampling: how the engine proposes a draft token: sample (drawn from q), "
                  "argmax (greedy draft, one-hot q), selector (DFlash 2's candidates), match "
                  "(drawn apart, accepted when equal); repeatable, one forward for all");
  cmd->add_option("--engine", *st->req.mutable_engine(),
                  "with --sampling: a serving engine's preset (vllm, sglang, zlab): its policy "
                  "and top-k/top-p conventions (docs/served-acceptance.md)");
}

// The job: its run and step, labels, how the call waits, intervals and
// shards.
void AddJobOptions(CLI::App* cmd, EvalState* st) {
  cmd->add_option("--run", *st->req.mutable_run(), "training run this checkpoint belongs to");
  cmd->add_option("--step", st->step, "training step of this checkpoint")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--label", st->labels, "KEY=VALUE job label (repeatable)");
  cmd->add_flag(
      "--unload-after", [st](int64_t) { st->req.set_unload_after(true); },
      "with --checkpoint: free the drafter when the job ends");
  cmd->add_flag("--detach", st->detach, "print the job id and return at once");
  cmd->add_flag("--sync", st->sync, "run inside this call (RunEval), no job");
  cmd->add_option("--ci", st->ci, "95% intervals over samples: bootstrap or none")
      ->check(CLI::IsMember({"bootstrap", "none"}))
      ->capture_default_str();
  cmd->add_option("--ci-resamples", st->ci_resamples, "bootstrap resamples (0 = 1000)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  cmd->add_option("--shards", st->shards,
                  "split the samples into N ranges by tokens, run on every device the server "
                  "lists and merged (0 = one per device)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
}

// The regression gate, and how progress is drawn.
void AddGateOptions(CLI::App* cmd, EvalState* st) {
  cmd->add_option("--gate", *st->req.mutable_gate(),
                  "regression gate: best, previous or a JOB id; exit 4 when this checkpoint is "
                  "significantly worse than that reference")
      ->check([](const std::string& v) { return v.empty() ? "--gate needs a value" : ""; });
  cmd->add_option("--metric", *st->req.mutable_gate_metric(),
                  "gate metric: tau (default), accept_length, acceptance[j], accuracy[j], "
                  "conditional[j]");
  cmd->add_option("--min-delta", st->min_delta,
                  "gate: worse only when the whole interval lies below -X")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--allow-recipe-mismatch", st->allow_recipe_mismatch,
                "gate against a reference whose recipe differs (else the gate is an error)");
  cmd->add_option("--gate-floor", st->gate_floor,
                  "gate: also worse (exit 4) when a slice's accept length (category, language, "
                  "thinking, context, continuation, suite dataset) falls by more than X; the "
                  "worst slice is named")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--progress", st->progress,
                  "auto (bar on a terminal, else lines), bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
}

}  // namespace

void AddEvalCommand(CliContext& ctx) {
  CliContext* cx = &ctx;
  EvalState* st = ctx.Keep<EvalState>();
  CLI::App* cmd = ctx.app.add_subcommand(
      "eval", "evaluate a drafter on a resident dataset (a job: waits unless --detach)");
  AddObjectOptions(cmd, st);
  AddScoringOptions(cmd, st);
  AddJobOptions(cmd, st);
  AddGateOptions(cmd, st);
  cmd->callback([cx, st] {
    CheckAndFill(*st);
    cx->run = [cx, st](EvalClient& c) {
      return st->sync ? RunSync(*cx, *st, c) : SubmitAndWait(*cx, *st, c);
    };
  });
}

}  // namespace dflash::client
