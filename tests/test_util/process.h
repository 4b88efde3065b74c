// File: process.h
// Real processes for integration tests: run a command to completion with its
// output captured, or keep a dflash-evald running on a free loopback port.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dflash::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal or the timeout
  std::string out, err;
};

// Runs argv[0] with argv; `env` entries ("K=V") are added to the environment.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}, double timeout_seconds = 120);

// DFLASH_EVALD / DFLASH_EVAL (binaries), DFLASH_FIXTURE_PY (a Python with
// torch), DFLASH_EXAMPLE_PY (the virtualenv python with the dflash_eval
// package, made by ctest's python_client_install), DFLASH_SOURCE_DIR: the
// environment's value, else the build's.
std::string BinaryFromEnv(const char* variable);

class ServerProcess {
 public:
  // Starts dflash-evald --listen 127.0.0.1:0 --state-dir STATE --port-file ...
  // plus `extra_args` (a --listen there replaces the default), and waits
  // (up to `timeout_seconds`) for its port.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& state_dir, const std::vector<std::string>& extra_args = {},
      double timeout_seconds = 60);
  ~ServerProcess();  // SIGTERM, then SIGKILL after 10 s

  int port() const { return port_; }
  std::string address() const;
  pid_t pid() const { return pid_; }
  // Sends `signal` and waits; returns the exit code (-1 if killed by a signal).
  int Stop(int signal);
  // Everything the server printed so far.
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace dflash::testing
