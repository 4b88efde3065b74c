// File: commands.h
// What the dflash-eval subcommands share: the global flags, the deferred
// action each command sets, output helpers and the exit-code mapping. The
// commands themselves live in commands_*.cc; cli.cc parses and dispatches.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <google/protobuf/message.h>
#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "client/cli.h"
#include "client/eval_client.h"

namespace dflash::client {

struct Globals {
  std::string server;
  bool json = false;
  bool detail = false;  // eval / results: the whole result, not one screen
  double timeout_seconds = 600;
  std::string token_file;  // else $DFLASH_EVAL_TOKEN
  std::string tls_ca, tls_cert, tls_key;
};

// A usage problem found after parsing (e.g. a missing conditional argument):
// thrown from a subcommand's callback, reported with exit 64.
struct UsageError {
  std::string message;
};

// UNAVAILABLE / DEADLINE_EXCEEDED -> exit 2; any other error -> exit 1.
int ReportStatus(const absl::Status& status, std::ostream& err);

class CliContext {
 public:
  CliContext(CLI::App& app, Globals& globals, std::ostream& out, std::ostream& err, bool out_is_tty)
      : app(app), g(globals), out(out), err(err), out_is_tty(out_is_tty) {}

  // The proto's JSON with --json, else `human`.
  void Print(const google::protobuf::Message& m, const std::string& human) {
    out << (g.json ? ToJsonText(m) : human);
  }

  // Storage for a command's flags that lives as long as the CLI.
  template <typename T>
  T* Keep() {
    auto p = std::make_shared<T>();
    kept_.push_back(p);
    return p.get();
  }

  CLI::App& app;
  Globals& g;
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty;
  // Set by the chosen subcommand's callback; run once parsing succeeded.
  std::function<int(EvalClient&)> run;

 private:
  static std::string ToJsonText(const google::protobuf::Message& m);
  std::vector<std::shared_ptr<void>> kept_;
};

// Follows `job` to its end (progress per `progress`: auto, bar, lines, none),
// then prints its result; a job that did not succeed is reported, exit 1.
int WaitAndPrintResult(CliContext& cx, EvalClient& c, const pb::EvalJob& job,
                       const std::string& progress);

void AddResourceCommands(CliContext& ctx);  // info health validate load-* unload ls
void AddEvalCommand(CliContext& ctx);       // eval
void AddJobCommands(CliContext& ctx);       // status results list cancel resubmit compare history
void AddServedCommands(CliContext& ctx);    // export-profile calibrate

}  // namespace dflash::client
