#include "app/job_backend_select.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "app/store_select.h"
#include "core/fleet_member.h"
#include "core/local_placement.h"
#include "fleet/fleet_backend.h"
#include "fleet/fleet_objects.h"
#include "fleet/fleet_placement.h"
#include "jobs/local_backend.h"

namespace dflash::app {

JobBackends SelectJobBackends(const ServerConfig& config, core::EvalCore& core,
                              store::ResultStore& store) {
  JobBackends chosen;
  if (!store.shared()) {
    chosen.backend = std::make_unique<jobs::LocalBackend>(store);
    chosen.placement = std::make_unique<core::LocalPlacement>(core, config.preload.suites);
    return chosen;
  }
  auto ms = [](double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  };
  fleet::FleetOptions options;
  options.server = FleetName(config);
  options.lease = ms(config.fleet_lease_seconds);
  options.heartbeat = ms(config.fleet_heartbeat_seconds);
  options.max_attempts = config.fleet_max_attempts;
  options.resident = [&core] { return fleet::ResidentNames(core); };
  options.info_json = [&core](const std::vector<std::string>& running) {
    return core::FleetInfoJson(core, running);
  };
  auto backend = std::make_unique<fleet::FleetBackend>(store, std::move(options));
  // The fleet's config (its preload list) names the targets and datasets
  // any server loads by name on demand.
  chosen.placement = std::make_unique<fleet::FleetPlacement>(
      core, *backend, fleet::MakeFleetObjects(config.preload.targets, config.preload.datasets));
  chosen.backend = std::move(backend);
  return chosen;
}

}  // namespace dflash::app
