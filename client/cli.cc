// The dispatcher: global flags, parsing, usage errors, then the chosen
// command's action against one EvalClient. Commands: commands_*.cc.
#include "client/cli.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "client/commands.h"
#include "client/eval_client.h"
#include "client/format.h"

namespace dflash::client {

int ReportStatus(const absl::Status& status, std::ostream& err) {
  const absl::StatusCode code = status.code();
  if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
    err << "dflash-eval: " << status.message() << "\n";
    return kExitUnreachable;
  }
  err << "dflash-eval: " << absl::StatusCodeToString(code) << ": " << status.message() << "\n";
  return kExitRpcError;
}

std::string CliContext::ToJsonText(const google::protobuf::Message& m) {
  return ToJson(m);
}

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Globals g;
  const char* env_server = std::getenv("DFLASH_EVAL_SERVER");
  g.server = env_server && *env_server ? env_server : "127.0.0.1:50051";

  CLI::App app{"dflash-eval: client for the dflash-evald evaluation server"};
  app.require_subcommand(1);
  // Global flags also after the command: `dflash-eval list --json`.
  app.fallthrough();
  app.add_option("--server", g.server,
                 "HOST:PORT (default: $DFLASH_EVAL_SERVER or 127.0.0.1:50051)");
  app.add_flag("--json", g.json, "print the reply as JSON (proto JSON mapping)");
  app.add_flag("--detail", g.detail,
               "eval, results: print the whole result (histogram, draft-length curve, "
               "per-position intervals, slices, timing), not one screen");
  app.add_option("--timeout", g.timeout_seconds, "seconds to wait for a reply (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--token-file", g.token_file,
                 "file whose first line is the bearer token for a server started with "
                 "--auth-token-file (default: $DFLASH_EVAL_TOKEN; the file wins)");
  app.add_option("--tls-ca", g.tls_ca, "PEM CA that signed the server's certificate: use TLS");
  app.add_option("--tls-cert", g.tls_cert, "PEM client certificate (mutual TLS; needs --tls-ca)");
  app.add_option("--tls-key", g.tls_key, "PEM private key for --tls-cert");

  // Progress bars only when stdout is the terminal itself.
  const bool out_is_tty = &out == &std::cout && isatty(STDOUT_FILENO) == 1;
  CliContext ctx(app, g, out, err, out_is_tty);
  AddResourceCommands(ctx);
  AddEvalCommand(ctx);
  AddJobCommands(ctx);
  AddServedCommands(ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return kExitUsage;
  } catch (const UsageError& e) {
    err << "dflash-eval: " << e.message << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  if (!ctx.run) {
    err << app.help();
    return kExitUsage;
  }
  absl::StatusOr<ConnectOptions> connect =
      LoadConnectOptions(g.token_file, g.tls_ca, g.tls_cert, g.tls_key);
  if (!connect.ok()) {
    err << "dflash-eval: " << connect.status().message() << "\n";
    return kExitUsage;
  }
  EvalClient client(g.server,
                    std::chrono::milliseconds(static_cast<int64_t>(g.timeout_seconds * 1000)),
                    *connect);
  return ctx.run(client);
}

}  // namespace dflash::client
