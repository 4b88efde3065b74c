// File: server_metrics.h
// The server's Prometheus metrics (prometheus-cpp's registry and text
// format), served over HTTP on --metrics-listen (http_exposer.h). Counters
// and histograms are fed by the OpsObserver hooks (common/ops_observer.h:
// RPCs from the service, jobs from the queue, loads and evaluations from the
// core); gauges of the core's state (resident bytes, device memory, jobs
// queued/running) are read from the core at each scrape. Nothing outside
// metrics/ knows of Prometheus.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "common/ops_observer.h"
#include "core/eval_core.h"
#include "metrics/http_exposer.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace dflash::metrics {

class ServerMetrics final : public OpsObserver {
 public:
  // `core` (may be null in tests) must outlive this object.
  explicit ServerMetrics(const core::EvalCore* core);
  ~ServerMetrics() override;

  // Starts the HTTP endpoint on HOST:PORT (port 0: a free one); returns the
  // bound port.
  absl::StatusOr<int> Serve(const std::string& listen);

  // OpsObserver
  void OnRpc(absl::string_view method, absl::StatusCode code, double seconds) override;
  void OnJobStates(const std::map<std::string, int64_t>& counts) override;
  void OnJobFinished(absl::string_view state, double seconds) override;
  void OnLoad(absl::string_view kind, absl::StatusCode code, double seconds) override;
  void OnEval(absl::StatusCode code, double seconds, const EvalCounts* counts) override;

  // 1 once the preload finished and the server is SERVING.
  void SetReady(bool ready);

  // The exposition text, as a scrape would see it (tests).
  std::string Render();

  struct Families;  // the metric families (server_metrics.cc)

 private:
  class CoreCollector;
  const core::EvalCore* core_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::shared_ptr<CoreCollector> collector_;
  std::unique_ptr<HttpExposer> exposer_;
};

}  // namespace dflash::metrics
