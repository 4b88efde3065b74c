#include "test_util/process.h"
#include <algorithm>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test_util/temp_dir.h"

extern char** environ;

namespace dflash::testing {
namespace {

using Clock = std::chrono::steady_clock;

pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  for (const std::string& e : env) envs.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Waits for `pid` up to `timeout_seconds`; returns the wait status or -1.
int WaitFor(pid_t pid, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (Clock::now() > deadline) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int ExitCode(int status) {
  return (status >= 0 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         double timeout_seconds) {
  TempDir dir;
  CommandResult result;
  const std::string out_path = dir.Join("out"), err_path = dir.Join("err");
  const pid_t pid = Spawn(argv, env, out_path, err_path);
  if (pid < 0) {
    result.err = absl::StrCat("cannot start ", argv.empty() ? "" : argv[0]);
    return result;
  }
  int status = WaitFor(pid, timeout_seconds);
  if (status == -2) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    status = -1;
  }
  result.exit_code = ExitCode(status);
  result.out = ReadFileOrEmpty(out_path);
  result.err = ReadFileOrEmpty(err_path);
  return result;
}

std::string BinaryFromEnv(const char* variable) {
  const char* v = std::getenv(variable);
  if (v != nullptr && *v != '\0') return v;
  const std::string name = variable;
#ifdef DFLASH_EVALD_PATH
  if (name == "DFLASH_EVALD") return DFLASH_EVALD_PATH;
#endif
  if (name == "DFLASH_EVAL") return DFLASH_EVAL_PATH;
  if (name == "DFLASH_FIXTURE_PY") return "/usr/bin/python3";
  if (name == "DFLASH_SOURCE_DIR") return DFLASH_SOURCE_DIR;
  if (name == "DFLASH_EXAMPLE_PY") return DFLASH_PY_CLIENT_PYTHON;
  ADD_FAILURE() << variable << " is not set and has no built-in default";
  return "";
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& state_dir, const std::vector<std::string>& extra_args,
    double timeout_seconds) {
  auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  const std::string port_file = state_dir + "/port";
  ::unlink(port_file.c_str());
  server->log_path_ = state_dir + "/server.log";
  std::vector<std::string> argv = {BinaryFromEnv("DFLASH_EVALD"), "--state-dir", state_dir,
                                   "--port-file", port_file};
  // The caller's --threads, else two.
  if (std::find(extra_args.begin(), extra_args.end(), "--threads") == extra_args.end()) {
    argv.insert(argv.end(), {"--threads", "2"});
  }
  // The caller's --listen, else a free loopback port.
  if (std::find(extra_args.begin(), extra_args.end(), "--listen") == extra_args.end()) {
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  server->pid_ = Spawn(argv, {}, server->log_path_, server->log_path_ + ".err");
  if (server->pid_ < 0) return absl::InternalError("cannot spawn dflash-evald");
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (Clock::now() < deadline) {
    std::ifstream in(port_file);
    if (in >> server->port_ && server->port_ > 0) return server;
    int status = 0;
    if (waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
      server->pid_ = -1;
      return absl::InternalError(absl::StrCat("dflash-evald exited with ", ExitCode(status),
                                              " before serving:\n", server->log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("dflash-evald did not serve within ", timeout_seconds, " s:\n", server->log()));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Stop(SIGTERM);
}

std::string ServerProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

int ServerProcess::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = WaitFor(pid_, 10);
  if (status == -2) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    status = -1;
  }
  pid_ = -1;
  return ExitCode(status);
}

std::string ServerProcess::log() const {
  return ReadFileOrEmpty(log_path_) + ReadFileOrEmpty(log_path_ + ".err");
}

}  // namespace dflash::testing
