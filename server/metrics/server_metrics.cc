#include "metrics/server_metrics.h"

#include <cmath>
#include <exception>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "metrics/http_exposer.h"
#include "resident/device.h"
#include "resident/resource.h"

namespace dflash::metrics {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

namespace {

// 1 ms .. ~9 min, doubling.
Histogram::BucketBoundaries SecondsBuckets(double first, int n) {
  Histogram::BucketBoundaries b;
  for (int i = 0; i < n; ++i) b.push_back(first * std::pow(2.0, i));
  return b;
}

std::string Code(absl::StatusCode code) {
  return absl::StatusCodeToString(code);
}

}  // namespace

struct ServerMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : rpc_requests(BuildCounter()
                         .Name("dflash_evald_rpc_requests_total")
                         .Help("RPCs finished, by method and status code")
                         .Register(r)),
        rpc_duration(BuildHistogram()
                         .Name("dflash_evald_rpc_duration_seconds")
                         .Help("RPC wall time, by method and status code")
                         .Register(r)),
        loads(BuildCounter()
                  .Name("dflash_evald_loads_total")
                  .Help("loads of targets, drafters and datasets, by kind and status code")
                  .Register(r)),
        load_duration(BuildHistogram()
                          .Name("dflash_evald_load_duration_seconds")
                          .Help("load wall time, by kind (reused resident objects excluded)")
                          .Register(r)),
        evals(BuildCounter()
                  .Name("dflash_evald_evals_total")
                  .Help("evaluations finished, by status code")
                  .Register(r)),
        eval_duration(BuildHistogram()
                          .Name("dflash_evald_eval_duration_seconds")
                          .Help("evaluation wall time (setup and compute)")
                          .Register(r)),
        eval_blocks(BuildCounter()
                        .Name("dflash_evald_eval_blocks_total")
                        .Help("blocks evaluated; rate() gives blocks per second")
                        .Register(r)),
        eval_tokens(BuildCounter()
                        .Name("dflash_evald_eval_tokens_total")
                        .Help("draft positions scored; rate() gives tokens per second")
                        .Register(r)),
        eval_compute(BuildCounter()
                         .Name("dflash_evald_eval_compute_seconds_total")
                         .Help("time spent in evaluation compute")
                         .Register(r)),
        eval_rate(BuildGauge()
                      .Name("dflash_evald_last_eval_throughput")
                      .Help("the last successful evaluation's compute throughput, by unit "
                            "(blocks_per_second, tokens_per_second)")
                      .Register(r)),
        jobs_finished(BuildCounter()
                          .Name("dflash_evald_jobs_finished_total")
                          .Help("jobs that reached a final state, by state")
                          .Register(r)),
        job_duration(BuildHistogram()
                         .Name("dflash_evald_job_duration_seconds")
                         .Help("job run time to its final state")
                         .Register(r)),
        ready(BuildGauge()
                  .Name("dflash_evald_ready")
                  .Help("1 once the preload finished and the server reports SERVING")
                  .Register(r)) {}

  Family<Counter>& rpc_requests;
  Family<Histogram>& rpc_duration;
  Family<Counter>& loads;
  Family<Histogram>& load_duration;
  Family<Counter>& evals;
  Family<Histogram>& eval_duration;
  Family<Counter>& eval_blocks;
  Family<Counter>& eval_tokens;
  Family<Counter>& eval_compute;
  Family<Gauge>& eval_rate;
  Family<Counter>& jobs_finished;
  Family<Histogram>& job_duration;
  Family<Gauge>& ready;
};

// Gauges of the core's state, refreshed at each scrape.
class ServerMetrics::CoreCollector final : public prometheus::Collectable {
 public:
  explicit CoreCollector(const core::EvalCore* core)
      : core_(core),
        resident_bytes_(BuildGauge()
                            .Name("dflash_evald_resident_bytes")
                            .Help("bytes held by resident objects, by kind")
                            .Register(registry_)),
        resident_objects_(BuildGauge()
                              .Name("dflash_evald_resident_objects")
                              .Help("resident objects, by kind")
                              .Register(registry_)),
        device_used_(BuildGauge()
                         .Name("dflash_evald_device_memory_used_bytes")
                         .Help("device memory held by resident objects, by device")
                         .Register(registry_)),
        device_total_(BuildGauge()
                          .Name("dflash_evald_device_memory_total_bytes")
                          .Help("device memory in total, by device")
                          .Register(registry_)),
        jobs_(BuildGauge().Name("dflash_evald_jobs").Help("jobs by state").Register(registry_)),
        queue_(BuildGauge()
                   .Name("dflash_evald_job_queue_length")
                   .Help("jobs waiting to run")
                   .Register(registry_)
                   .Add({})),
        uptime_(BuildGauge()
                    .Name("dflash_evald_uptime_seconds")
                    .Help("seconds since the server started")
                    .Register(registry_)
                    .Add({})),
        build_info_(BuildGauge()
                        .Name("dflash_evald_build_info")
                        .Help("always 1; the labels say which build is running")
                        .Register(registry_)) {}

  void SetJobStates(const std::map<std::string, int64_t>& counts) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_reported_ = true;
    for (const char* s : {"queued", "running", "succeeded", "failed", "cancelled", "interrupted"}) {
      jobs_.Add({{"state", s}}).Set(0);
    }
    for (const auto& [state, n] : counts) {
      jobs_.Add({{"state", absl::AsciiStrToLower(state)}}).Set(static_cast<double>(n));
    }
    auto q = counts.find("queued");
    queue_.Set(q == counts.end() ? 0 : static_cast<double>(q->second));
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (core_ != nullptr) Refresh();
    return registry_.Collect();
  }

 private:
  void Refresh() const {
    const core::ServerInfo info = core_->GetServerInfo();
    std::map<std::string, double> bytes, objects;
    for (const char* k : {"target", "drafter", "dataset"}) bytes[k] = objects[k] = 0;
    for (const resident::ResourceInfo& r : core_->ListResources(std::nullopt)) {
      bytes[resident::ResourceKindName(r.kind)] += static_cast<double>(r.bytes);
      objects[resident::ResourceKindName(r.kind)] += 1;
    }
    for (const auto& [k, v] : bytes) resident_bytes_.Add({{"kind", k}}).Set(v);
    for (const auto& [k, v] : objects) resident_objects_.Add({{"kind", k}}).Set(v);
    for (const resident::DeviceInfo& d : info.devices) {
      device_used_.Add({{"device", d.name}}).Set(static_cast<double>(d.used_memory_bytes));
      device_total_.Add({{"device", d.name}}).Set(static_cast<double>(d.total_memory_bytes));
    }
    if (!jobs_reported_) {  // no job hooks in this build: the core's counts
      jobs_.Add({{"state", "queued"}}).Set(info.queued_jobs);
      jobs_.Add({{"state", "running"}}).Set(info.running_jobs);
      queue_.Set(info.queued_jobs);
    }
    uptime_.Set(info.uptime_seconds);
    build_info_
        .Add({{"version", info.server_version},
              {"git_sha", info.git_sha},
              {"libtorch", info.libtorch_version},
              {"blas", info.blas}})
        .Set(1);
  }

  const core::EvalCore* core_;
  mutable std::mutex mu_;
  bool jobs_reported_ = false;
  prometheus::Registry registry_;
  Family<Gauge>& resident_bytes_;
  Family<Gauge>& resident_objects_;
  Family<Gauge>& device_used_;
  Family<Gauge>& device_total_;
  Family<Gauge>& jobs_;
  Gauge& queue_;
  Gauge& uptime_;
  Family<Gauge>& build_info_;
};

ServerMetrics::ServerMetrics(const core::EvalCore* core)
    : core_(core),
      registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)),
      collector_(std::make_shared<CoreCollector>(core)) {
  families_->ready.Add({}).Set(0);
}

ServerMetrics::~ServerMetrics() = default;

absl::StatusOr<int> ServerMetrics::Serve(const std::string& listen) {
  auto exposer = HttpExposer::Start(listen, [this] { return Render(); });
  if (!exposer.ok()) return exposer.status();
  exposer_ = std::move(exposer).value();
  return exposer_->port();
}

void ServerMetrics::OnRpc(absl::string_view method, absl::StatusCode code, double seconds) {
  const prometheus::Labels labels{{"method", std::string(method)}, {"code", Code(code)}};
  families_->rpc_requests.Add(labels).Increment();
  families_->rpc_duration.Add(labels, SecondsBuckets(0.001, 20)).Observe(seconds);
}

void ServerMetrics::OnJobStates(const std::map<std::string, int64_t>& counts) {
  collector_->SetJobStates(counts);
}

void ServerMetrics::OnJobFinished(absl::string_view state, double seconds) {
  families_->jobs_finished.Add({{"state", absl::AsciiStrToLower(state)}}).Increment();
  families_->job_duration.Add({}, SecondsBuckets(0.01, 18)).Observe(seconds);
}

void ServerMetrics::OnLoad(absl::string_view kind, absl::StatusCode code, double seconds) {
  const std::string k(kind);
  families_->loads.Add({{"kind", k}, {"code", Code(code)}}).Increment();
  if (code == absl::StatusCode::kOk) {
    families_->load_duration.Add({{"kind", k}}, SecondsBuckets(0.01, 16)).Observe(seconds);
  }
}

void ServerMetrics::OnEval(absl::StatusCode code, double seconds, const EvalCounts* counts) {
  families_->evals.Add({{"code", Code(code)}}).Increment();
  if (counts == nullptr) return;
  families_->eval_duration.Add({}, SecondsBuckets(0.01, 18)).Observe(seconds);
  families_->eval_blocks.Add({}).Increment(static_cast<double>(counts->blocks));
  families_->eval_tokens.Add({}).Increment(static_cast<double>(counts->tokens_scored));
  families_->eval_compute.Add({}).Increment(counts->compute_seconds);
  if (counts->compute_seconds > 0) {
    families_->eval_rate.Add({{"unit", "blocks_per_second"}})
        .Set(static_cast<double>(counts->blocks) / counts->compute_seconds);
    families_->eval_rate.Add({{"unit", "tokens_per_second"}})
        .Set(static_cast<double>(counts->tokens_scored) / counts->compute_seconds);
  }
}

void ServerMetrics::SetReady(bool ready) {
  families_->ready.Add({}).Set(ready ? 1 : 0);
}

std::string ServerMetrics::Render() {
  std::vector<prometheus::MetricFamily> all = registry_->Collect();
  std::vector<prometheus::MetricFamily> core = collector_->Collect();
  all.insert(all.end(), core.begin(), core.end());
  return prometheus::TextSerializer().Serialize(all);
}

}  // namespace dflash::metrics
