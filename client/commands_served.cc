// Serving commands: export-profile (a job's acceptance as a serving
// simulator reads it) and calibrate (an engine's counters against a job).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/format_jobs.h"

namespace dflash::client {
namespace {

// The file's bytes, or why it cannot be read (a usage error: exit 64).
std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError{
        absl::StrCat("calibrate: cannot read --served '", path, "': ", std::strerror(errno))};
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void AddExportProfile(CliContext& ctx) {
  struct State {
    pb::ExportProfileRequest req;
    std::string out;
    int setting = 0;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand(
      "export-profile",
      "a finished job's acceptance as a serving profile (modelopt, vllm, sglang)");
  cmd->add_option("job", *st->req.mutable_id(), "job id")->required();
  cmd->add_option("--format", *st->req.mutable_format(),
                  "modelopt (speculation_profile.json), vllm or sglang")
      ->required();
  cmd->add_option("--setting", st->setting,
                  "0 = the greedy result (default); i = the job's i-th sampled setting x policy")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--out", st->out, "write the profile to FILE instead of stdout");
  cmd->callback([cx, st] {
    st->req.set_setting(st->setting);
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.ExportProfile(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      if (st->out.empty()) {
        cx->out << resp->profile_json() << "\n";
        return kExitOk;
      }
      std::ofstream f(st->out, std::ios::binary | std::ios::trunc);
      if (f) f << resp->profile_json() << "\n";
      if (!f || !f.flush()) {
        cx->err << "dflash-eval: cannot write '" << st->out << "': " << std::strerror(errno)
                << "\n";
        return kExitRpcError;
      }
      cx->err << "profile (" << resp->format() << ") written to " << st->out << "\n";
      return kExitOk;
    };
  });
}

void AddCalibrate(CliContext& ctx) {
  struct State {
    pb::CalibrateEvalRequest req;
    std::vector<std::string> served;
    int setting = 0;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand(
      "calibrate", "an engine's own counters against a job's prediction (stored with the job)");
  cmd->add_option("job", *st->req.mutable_id(), "job id")->required();
  cmd->add_option("--served", st->served,
                  "two vLLM /metrics scrapes (before, after), SGLang meta_info JSON lines, or "
                  "z-lab's benchmark output")
      ->required();
  cmd->add_option("--setting", st->setting,
                  "0 = the greedy result (default); i = the job's i-th sampled setting x policy")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([cx, st] {
    st->req.set_setting(st->setting);
    for (const std::string& path : st->served) {
      pb::ServedFile* f = st->req.add_served();
      f->set_path(path);
      f->set_contents(ReadWhole(path));
    }
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.CalibrateEval(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(resp->calibration(), resp->calibration().text());
      return kExitOk;
    };
  });
}

}  // namespace

void AddServedCommands(CliContext& ctx) {
  AddExportProfile(ctx);
  AddCalibrate(ctx);
}

}  // namespace dflash::client
