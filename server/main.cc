// dflash-evald: the evaluation server. Wires flags to objects and runs until
// SIGINT/SIGTERM; everything else lives in core/ and service/.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "core/device.h"
#include "core/eval_core_impl.h"
#include "core/job_service_impl.h"
#include "dflash/build_info.h"
#include "service/eval_service.h"
#include "store/sqlite_result_store.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string state_dir;
  std::string log_level = "info";
  std::string device = "auto";
  int threads = 0;
  int workers = 4;
  int max_queued = 64;
  int concurrent_jobs = 1;
  std::vector<std::string> data_roots;
  std::string port_file;
};

std::string DefaultStateDir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/dflash-evald";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.local/state/dflash-evald";
  }
  return "/var/lib/dflash-evald";
}

int Fail(const std::string& message) {
  spdlog::critical("{}", message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"dflash-evald: evaluation server for DFlash drafters"};
  app.set_version_flag("--version", std::string(dflash::kVersion) + " (" + dflash::kGitSha + ")");
  app.add_option("--listen", flags.listen, "address to serve on (HOST:PORT; port 0 picks a free one)")
      ->capture_default_str();
  app.add_option("--state-dir", flags.state_dir,
                 "directory for results and default data roots (default: $XDG_STATE_HOME/dflash-evald "
                 "or ~/.local/state/dflash-evald)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--device", flags.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "intra-op threads for tensor work (default: the cores available)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--workers", flags.workers, "threads serving long RPCs (loads, evaluations)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-queued", flags.max_queued,
                 "evaluation jobs waiting at most; SubmitEval past it is RESOURCE_EXHAUSTED")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--concurrent-jobs", flags.concurrent_jobs,
                 "evaluation jobs running at once on the device")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--data-root", flags.data_roots,
                 "directory the server may read models and datasets from (repeatable; default: "
                 "STATE_DIR/models and STATE_DIR/datasets)");
  app.add_option("--port-file", flags.port_file,
                 "write the bound port here once serving (useful with --listen HOST:0)");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(flags.log_level));
  if (flags.state_dir.empty()) flags.state_dir = DefaultStateDir();

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto device = dflash::core::ResolveDevice(flags.device);
  if (!device.ok()) return Fail(std::string(device.status().message()));
  spdlog::info("device {}: {}", device->device, device->note);

  const int threads = flags.threads > 0
                          ? flags.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);

  dflash::core::CoreOptions options;
  options.device = device->device;
  options.threads = threads;
  options.state_dir = flags.state_dir;
  options.data_roots = flags.data_roots;
  auto core = dflash::core::EvalCoreImpl::Create(options);
  if (!core.ok()) return Fail(std::string(core.status().message()));
  const dflash::core::ServerInfo info = (*core)->GetServerInfo();
  spdlog::info("dflash-evald {} ({}), libtorch {}, {} intra-op threads, BLAS: {}",
               info.server_version, info.git_sha, info.libtorch_version, threads, info.blas);
  spdlog::info("state dir {}; data roots: {}", info.state_dir, fmt::join(info.data_roots, ", "));

  // Results: every job and its result, durable across restarts.
  const std::string store_path = info.state_dir + "/results.sqlite3";
  auto store = dflash::store::SqliteResultStore::Open(store_path);
  if (!store.ok()) return Fail(std::string(store.status().message()));
  dflash::jobs::JobQueueOptions job_options;
  job_options.max_queued = flags.max_queued;
  job_options.concurrent_jobs = flags.concurrent_jobs;
  job_options.server_version = info.server_version;
  auto jobs = dflash::core::JobServiceImpl::Create(**core, **store, job_options);
  if (!jobs.ok()) return Fail(std::string(jobs.status().message()));
  spdlog::info("results store {}; {} concurrent job(s), at most {} queued", store_path,
               flags.concurrent_jobs, flags.max_queued);

  dflash::service::EvalService service(**core, jobs->get(), flags.workers);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second server share a
  // port silently; we want "address in use" to be an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return Fail("cannot listen on " + flags.listen +
                " (address in use, or not a valid HOST:PORT)");
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  spdlog::info("serving dflash.eval.v1.DrafterEval on {} (port {})", flags.listen, port);
  if (!flags.port_file.empty()) {
    const std::string tmp = flags.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), flags.port_file.c_str());  // readers never see a partial file
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server->GetHealthCheckService()->SetServingStatus(false);
  // New jobs are refused; a running job stops at its next chunk boundary and
  // is stored INTERRUPTED (watch streams end with that state).
  (*jobs)->Shutdown(std::chrono::milliseconds(0));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  server->Wait();
  jobs->reset();
  store->reset();  // closes the database cleanly
  spdlog::info("stopped");
  return 0;
}
