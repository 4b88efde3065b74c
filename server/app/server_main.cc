#include "app/server_main.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "app/job_backend_select.h"
#include "app/listen_policy.h"
#include "app/logging.h"
#include "app/preload.h"
#include "app/server_config.h"
#include "app/store_select.h"
#include "app/tls_credentials.h"
#include "common/ops_observer.h"
#include "common/status_macros.h"
#include "core/eval_core_impl.h"
#include "core/job_service_impl.h"
#include "dflash/build_info.h"
#include "metrics/server_metrics.h"
#include "resident/device.h"
#include "service/eval_service.h"
#include "service/token_auth.h"
#include "web/web_server.h"
#include "web/web_site.h"

namespace dflash::app {
namespace {

std::string DefaultStateDir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/dflash-evald";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.local/state/dflash-evald";
  }
  return "/var/lib/dflash-evald";
}

// Installs the metrics as the ops observer for as long as this lives.
class ScopedOpsObserver {
 public:
  explicit ScopedOpsObserver(OpsObserver* observer) { SetOpsObserver(observer); }
  ~ScopedOpsObserver() { SetOpsObserver(nullptr); }
  ScopedOpsObserver(const ScopedOpsObserver&) = delete;
  ScopedOpsObserver& operator=(const ScopedOpsObserver&) = delete;
};

// Everything the running server holds, in the order it is built; members are
// destroyed in reverse, each before what it uses.
struct Server {
  std::optional<service::TokenAuth> auth;
  std::unique_ptr<core::EvalCoreImpl> core;
  std::unique_ptr<metrics::ServerMetrics> metrics;
  std::optional<ScopedOpsObserver> observer;
  std::unique_ptr<store::ResultStore> store;
  std::unique_ptr<core::JobServiceImpl> jobs;
  std::unique_ptr<service::EvalService> service;
  std::unique_ptr<grpc::Server> grpc;
  int port = 0;
  std::unique_ptr<web::WebSite> site;
  std::unique_ptr<web::WebServer> web;
};

// Blocks the stop signals in this thread and every thread it starts; the
// main thread waits for them (WaitForStopSignal).
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

void WaitForStopSignal(const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
}

// Who may call: the token file, and an open port refused before anything is
// loaded (listen_policy.h).
absl::StatusOr<std::optional<service::TokenAuth>> LoadAuth(const ServerConfig& config) {
  std::optional<service::TokenAuth> auth;
  if (!config.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(auth, service::TokenAuth::FromFile(config.auth_token_file));
    spdlog::info("bearer tokens required: {} full, {} read-only (from {})", auth->full_tokens(),
                 auth->read_only_tokens(), config.auth_token_file);
  }
  RETURN_IF_ERROR(CheckListen(config.listen, {auth.has_value(), !config.tls_client_ca.empty(),
                                              config.insecure_allow_remote}));
  // The web view follows the same rule (it has no TLS of its own).
  if (!config.http_listen.empty()) {
    RETURN_IF_ERROR(
        CheckListen(config.http_listen, {auth.has_value(), false, config.insecure_allow_remote}),
        "--http-listen");
  }
  if (!IsLoopbackListen(config.listen) && !auth && config.tls_client_ca.empty()) {
    spdlog::warn("listening on {} without authentication (--insecure-allow-remote)", config.listen);
  }
  return auth;
}

// The device, the intra-op threads and the core with its limits.
absl::StatusOr<std::unique_ptr<core::EvalCoreImpl>> CreateCore(const ServerConfig& config) {
  ASSIGN_OR_RETURN(std::vector<resident::DeviceChoice> devices,
                   resident::ResolveDevices(config.device));
  const resident::DeviceChoice& device = devices.front();
  for (const resident::DeviceChoice& d : devices) spdlog::info("device {}: {}", d.device, d.note);
  const int threads = config.threads > 0
                          ? config.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  resident::SetIntraOpThreads(threads);

  core::CoreOptions options;
  resident::RegistryOptions& registry = options.registry;
  registry.device = device.device;
  registry.data_roots = config.data_roots;
  registry.no_mmap = config.no_mmap;
  registry.mmap_min_age_seconds = config.mmap_min_age_seconds;
  registry.max_resident_bytes = config.max_resident_bytes;
  if (registry.max_resident_bytes == 0) {  // 90% of the device's memory, when known
    for (const resident::DeviceInfo& d : resident::ListDevices(threads)) {
      if (d.name == device.device) registry.max_resident_bytes = d.total_memory_bytes / 10 * 9;
    }
  }
  for (const resident::DeviceChoice& d : devices) options.eval_devices.push_back(d.device);
  options.threads = threads;
  options.state_dir = config.state_dir;
  options.max_eval_blocks = config.max_eval_blocks;
  options.logits_budget_bytes = config.logits_budget_bytes;
  options.min_target_consistency = config.min_target_consistency;
  ASSIGN_OR_RETURN(std::unique_ptr<core::EvalCoreImpl> core, core::EvalCoreImpl::Create(options));
  const core::ServerInfo info = core->GetServerInfo();
  spdlog::info("dflash-evald {} ({}), libtorch {}, {} intra-op threads, BLAS: {}",
               info.server_version, info.git_sha, info.libtorch_version, threads, info.blas);
  spdlog::info("state dir {}; data roots: {}", info.state_dir, fmt::join(info.data_roots, ", "));
  spdlog::info(
      "limits: resident {} bytes, {} blocks per evaluation, {} byte requests, {} watch "
      "streams (0 = no limit)",
      registry.max_resident_bytes, options.max_eval_blocks, config.max_request_bytes,
      config.max_concurrent_streams);
  return core;
}

// Metrics: the service, the job queue and the core report to the ops
// observer (common/ops_observer.h); gauges are read from the core.
absl::Status StartMetrics(const ServerConfig& config, Server& s) {
  s.metrics = std::make_unique<metrics::ServerMetrics>(s.core.get());
  s.observer.emplace(s.metrics.get());
  if (config.metrics_listen.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int metrics_port, s.metrics->Serve(config.metrics_listen));
  const std::string host = config.metrics_listen.substr(0, config.metrics_listen.rfind(':'));
  spdlog::info("metrics on http://{}:{}/metrics", host, metrics_port);
  return absl::OkStatus();
}

// Results: every job and its result, durable across restarts.
absl::Status StartJobs(const ServerConfig& config, Server& s) {
  const core::ServerInfo info = s.core->GetServerInfo();
  ASSIGN_OR_RETURN(OpenedStore opened, OpenStore(config));
  s.store = std::move(opened.store);
  jobs::JobQueueOptions job_options;
  job_options.max_queued = config.max_queued;
  job_options.concurrent_jobs = config.concurrent_jobs;
  job_options.server_version = info.server_version;
  JobBackends chosen = SelectJobBackends(config, *s.core, *s.store);
  ASSIGN_OR_RETURN(
      s.jobs, core::JobServiceImpl::Create(*s.core, *s.store, job_options,
                                           std::move(chosen.backend), std::move(chosen.placement)));
  spdlog::info("results store {}; {} concurrent job(s), at most {} queued", opened.description,
               config.concurrent_jobs, config.max_queued);
  if (s.store->shared()) {
    spdlog::info("fleet server '{}': lease {} s, heartbeat {} s, {} attempts per job",
                 FleetName(config), config.fleet_lease_seconds, config.fleet_heartbeat_seconds,
                 config.fleet_max_attempts);
  }
  return absl::OkStatus();
}

// Writes the bound port to `path` through a temporary file, so readers never
// see a partial one.
void WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

// DrafterEval, health (NOT_SERVING until the preload is done, so probes wait
// for it) and reflection on the --listen address.
absl::Status StartGrpc(const ServerConfig& config,
                       const std::shared_ptr<grpc::ServerCredentials>& credentials, Server& s) {
  service::ServiceOptions service_options;
  service_options.auth = s.auth ? &*s.auth : nullptr;
  service_options.max_watch_streams = config.max_concurrent_streams;
  s.service = std::make_unique<service::EvalService>(*s.core, s.jobs.get(), config.workers,
                                                     service_options);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second server share a
  // port silently; we want "address in use" to be an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_request_bytes));
  builder.AddListeningPort(config.listen, credentials, &s.port);
  builder.RegisterService(s.service.get());
  s.grpc = builder.BuildAndStart();
  if (!s.grpc || s.port == 0) {
    return absl::UnavailableError("cannot listen on " + config.listen +
                                  " (address in use, or not a valid HOST:PORT)");
  }
  s.grpc->GetHealthCheckService()->SetServingStatus(false);
  spdlog::info("listening for dflash.eval.v1.DrafterEval on {} (port {})", config.listen, s.port);
  return absl::OkStatus();
}

// The read-only web view (docs/web.md) on --http-listen; with tokens every
// page needs one.
absl::Status StartWeb(const ServerConfig& config, Server& s) {
  if (config.http_listen.empty()) return absl::OkStatus();  // its bind rule: LoadAuth
  s.site = std::make_unique<web::WebSite>(*s.jobs, *s.core);
  web::WebServer::TokenCheck tokens;
  if (s.auth) {
    const service::TokenAuth* auth = &*s.auth;
    tokens = [auth](absl::string_view token) { return auth->MayRead(token); };
  }
  ASSIGN_OR_RETURN(s.web, web::WebServer::Start(config.http_listen, *s.site, tokens));
  const std::string host = config.http_listen.substr(0, config.http_listen.rfind(':'));
  spdlog::info("web view on http://{}:{}/", host, s.web->port());
  if (!config.http_port_file.empty()) WritePortFile(config.http_port_file, s.web->port());
  return absl::OkStatus();
}

// New jobs are refused; a running job stops at its next chunk boundary and is
// stored INTERRUPTED (watch streams end with that state). Then the calls in
// flight finish and the database is closed cleanly.
void Stop(Server& s) {
  s.grpc->GetHealthCheckService()->SetServingStatus(false);
  s.web.reset();  // the pages read the job service
  s.jobs->Shutdown(std::chrono::milliseconds(0));
  spdlog::info("job queue stopped");
  s.grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  s.grpc->Wait();
  s.metrics->SetReady(false);
  s.observer.reset();
  s.jobs.reset();
  s.store.reset();
  spdlog::info("stopped");
}

// Fleet: the health service says NOT_SERVING while the shared store does not
// answer heartbeats (Kubernetes readiness then takes the pod out of the
// Service), SERVING again when it does.
class ReadinessFollowsStore {
 public:
  explicit ReadinessFollowsStore(Server& s) {
    if (!s.store->shared()) return;
    thread_ = std::thread([this, &s] {
      bool ready = true;
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
        if (s.jobs->store_reachable() == ready) continue;
        ready = !ready;
        s.grpc->GetHealthCheckService()->SetServingStatus(ready);
        s.metrics->SetReady(ready);
        if (ready) spdlog::info("results store reachable again: SERVING");
        if (!ready) spdlog::warn("results store unreachable: health NOT_SERVING");
      }
    });
  }
  ~ReadinessFollowsStore() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

absl::Status RunServer(const ServerConfig& config) {
  const sigset_t stop_signals = BlockStopSignals();
  Server s;
  ASSIGN_OR_RETURN(s.auth, LoadAuth(config));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, ServerCredentials(config));
  ASSIGN_OR_RETURN(s.core, CreateCore(config));
  RETURN_IF_ERROR(StartMetrics(config, s));
  RETURN_IF_ERROR(StartJobs(config, s));
  RETURN_IF_ERROR(StartGrpc(config, credentials, s));
  if (absl::Status web = StartWeb(config, s); !web.ok()) {
    s.grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    s.grpc->Wait();
    return web;
  }
  // Written once every listener is up: whoever waits for it (tests, scripts)
  // then finds the web view's port file too.
  if (!config.port_file.empty()) WritePortFile(config.port_file, s.port);
  if (absl::Status preloaded = RunPreload(*s.core, config.preload); !preloaded.ok()) {
    s.grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    s.grpc->Wait();
    return preloaded;
  }
  s.grpc->GetHealthCheckService()->SetServingStatus(true);
  s.metrics->SetReady(true);
  spdlog::info("serving dflash.eval.v1.DrafterEval on {} (port {})", config.listen, s.port);
  {
    ReadinessFollowsStore readiness(s);
    WaitForStopSignal(stop_signals);
  }
  Stop(s);
  return absl::OkStatus();
}

}  // namespace

int ServerMain(int argc, char** argv) {
  // Every setting: flags, or --config FILE (server_config.h).
  ServerConfig config;
  CLI::App app{"dflash-evald: evaluation server for DFlash drafters"};
  app.set_version_flag("--version", std::string(kVersion) + " (" + kGitSha + ")");
  AddServerOptions(app, config);
  CLI11_PARSE(app, argc, argv);

  absl::Status status = ConfigureLogging(config.log_level, config.log_format);
  if (status.ok()) {
    if (!config.config_file.empty()) spdlog::info("settings from {}", config.config_file);
    if (config.state_dir.empty()) config.state_dir = DefaultStateDir();
    status = RunServer(config);
  }
  if (!status.ok()) {
    spdlog::critical("{}", std::string(status.message()));
    return 1;
  }
  return 0;
}

}  // namespace dflash::app
