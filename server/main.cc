// dflash-evald: the evaluation server. Wires flags to objects and runs until
// SIGINT/SIGTERM; everything else lives in core/ and service/.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "app/listen_policy.h"
#include "app/logging.h"
#include "app/preload.h"
#include "app/server_config.h"
#include "core/device.h"
#include "core/eval_core_impl.h"
#include "core/job_service_impl.h"
#include "dflash/build_info.h"
#include "metrics/server_metrics.h"
#include "service/eval_service.h"
#include "service/token_auth.h"
#include "store/sqlite_result_store.h"

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

int Fail(const std::string& message) {
  spdlog::critical("{}", message);
  return 1;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + std::string(flag) + " file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// TLS from --tls-cert/--tls-key (and --tls-client-ca: clients must present a
// certificate it signed), else plain text.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const dflash::app::ServerConfig& flags) {
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together; got only " +
                                      std::string(flags.tls_cert.empty() ? "--tls-key"
                                                                         : "--tls-cert"));
  }
  if (flags.tls_cert.empty()) {
    if (!flags.tls_client_ca.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  auto cert = ReadPem(flags.tls_cert, "--tls-cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(flags.tls_key, "--tls-key");
  if (!key.ok()) return key.status();
  pair.cert_chain = *cert;
  pair.private_key = *key;
  options.pem_key_cert_pairs.push_back(pair);
  if (!flags.tls_client_ca.empty()) {
    auto ca = ReadPem(flags.tls_client_ca, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

int main(int argc, char** argv) {
  // Every setting: flags, or --config FILE (app/server_config.h).
  dflash::app::ServerConfig flags;
  CLI::App app{"dflash-evald: evaluation server for DFlash drafters"};
  app.set_version_flag("--version", std::string(dflash::kVersion) + " (" + dflash::kGitSha + ")");
  dflash::app::AddServerOptions(app, flags);
  CLI11_PARSE(app, argc, argv);

  if (auto st = dflash::app::ConfigureLogging(flags.log_level, flags.log_format); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  if (!flags.config_file.empty()) spdlog::info("settings from {}", flags.config_file);
  if (flags.state_dir.empty()) flags.state_dir = DefaultStateDir();

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Who may call: refuse an open port before anything is loaded.
  std::optional<dflash::service::TokenAuth> auth;
  if (!flags.auth_token_file.empty()) {
    auto loaded = dflash::service::TokenAuth::FromFile(flags.auth_token_file);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    auth = *std::move(loaded);
    spdlog::info("bearer tokens required: {} full, {} read-only (from {})", auth->full_tokens(),
                 auth->read_only_tokens(), flags.auth_token_file);
  }
  if (auto st = dflash::app::CheckListen(
          flags.listen, {auth.has_value(), !flags.tls_client_ca.empty(),
                         flags.insecure_allow_remote});
      !st.ok()) {
    return Fail(std::string(st.message()));
  }
  if (!dflash::app::IsLoopbackListen(flags.listen) && !auth && flags.tls_client_ca.empty()) {
    spdlog::warn("listening on {} without authentication (--insecure-allow-remote)",
                 flags.listen);
  }
  auto credentials = ServerCredentials(flags);
  if (!credentials.ok()) return Fail(std::string(credentials.status().message()));

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
  options.max_eval_blocks = flags.max_eval_blocks;
  options.max_resident_bytes = flags.max_resident_bytes;
  if (options.max_resident_bytes == 0) {  // 90% of the device's memory, when known
    for (const dflash::core::DeviceInfo& d : dflash::core::ListDevices(threads)) {
      if (d.name == device->device) options.max_resident_bytes = d.total_memory_bytes / 10 * 9;
    }
  }
  auto core = dflash::core::EvalCoreImpl::Create(options);
  if (!core.ok()) return Fail(std::string(core.status().message()));
  const dflash::core::ServerInfo info = (*core)->GetServerInfo();
  spdlog::info("dflash-evald {} ({}), libtorch {}, {} intra-op threads, BLAS: {}",
               info.server_version, info.git_sha, info.libtorch_version, threads, info.blas);
  spdlog::info("state dir {}; data roots: {}", info.state_dir, fmt::join(info.data_roots, ", "));
  spdlog::info("limits: resident {} bytes, {} blocks per evaluation, {} byte requests, {} watch "
               "streams (0 = no limit)",
               options.max_resident_bytes, options.max_eval_blocks, flags.max_request_bytes,
               flags.max_concurrent_streams);

  // Metrics: the service, the job queue and the core report to the ops
  // observer (common/ops_observer.h); gauges are read from the core.
  dflash::metrics::ServerMetrics metrics(core->get());
  dflash::SetOpsObserver(&metrics);
  if (!flags.metrics_listen.empty()) {
    auto metrics_port = metrics.Serve(flags.metrics_listen);
    if (!metrics_port.ok()) return Fail(std::string(metrics_port.status().message()));
    const std::string host = flags.metrics_listen.substr(0, flags.metrics_listen.rfind(':'));
    spdlog::info("metrics on http://{}:{}/metrics", host, *metrics_port);
  }


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

  dflash::service::ServiceOptions service_options;
  service_options.auth = auth ? &*auth : nullptr;
  service_options.max_watch_streams = flags.max_concurrent_streams;
  dflash::service::EvalService service(**core, jobs->get(), flags.workers,
                                       service_options);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second server share a
  // port silently; we want "address in use" to be an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.SetMaxReceiveMessageSize(static_cast<int>(flags.max_request_bytes));
  builder.AddListeningPort(flags.listen, *credentials, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return Fail("cannot listen on " + flags.listen +
                " (address in use, or not a valid HOST:PORT)");
  }
  // NOT_SERVING until the preload is done, so probes wait for it.
  server->GetHealthCheckService()->SetServingStatus(false);
  spdlog::info("listening for dflash.eval.v1.DrafterEval on {} (port {})", flags.listen, port);
  if (!flags.port_file.empty()) {
    const std::string tmp = flags.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), flags.port_file.c_str());  // readers never see a partial file
  }
  if (auto st = dflash::app::RunPreload(**core, flags.preload); !st.ok()) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server->Wait();
    return Fail(std::string(st.message()));
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  metrics.SetReady(true);
  spdlog::info("serving dflash.eval.v1.DrafterEval on {} (port {})", flags.listen, port);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server->GetHealthCheckService()->SetServingStatus(false);
  // New jobs are refused; a running job stops at its next chunk boundary and
  // is stored INTERRUPTED (watch streams end with that state).
  (*jobs)->Shutdown(std::chrono::milliseconds(0));
  spdlog::info("job queue stopped");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  server->Wait();
  metrics.SetReady(false);
  dflash::SetOpsObserver(nullptr);
  jobs->reset();
  store->reset();  // closes the database cleanly
  spdlog::info("stopped");
  return 0;
}
