#include "core/fleet_member.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "resident/device.h"
#include "resident/resource.h"

namespace dflash::core {

std::string FleetInfoJson(const EvalCore& core, const std::vector<std::string>& running_jobs) {
  const ServerInfo info = core.GetServerInfo();
  nlohmann::json j = {{"device", info.default_device}, {"running_jobs", running_jobs}};
  for (const resident::DeviceInfo& d : info.devices) {
    if (d.name != info.default_device) continue;
    j["device_description"] = d.description;
    j["total_memory_bytes"] = d.total_memory_bytes;
    j["used_memory_bytes"] = d.used_memory_bytes;
  }
  const std::pair<resident::ResourceKind, const char*> kinds[] = {
      {resident::ResourceKind::kTarget, "targets"},
      {resident::ResourceKind::kDataset, "datasets"},
      {resident::ResourceKind::kDrafter, "drafters"}};
  for (const auto& [kind, key] : kinds) {
    std::vector<std::string> names;
    for (const resident::ResourceInfo& r : core.ListResources(kind)) names.push_back(r.name);
    j[key] = names;
  }
  return j.dump();
}

absl::StatusOr<FleetMember> ParseFleetMember(const std::string& name, const std::string& info_json,
                                             int64_t heartbeat_age_micros) {
  const nlohmann::json j = nlohmann::json::parse(info_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet server '", name, "' left a heartbeat that is not a JSON object"));
  }
  try {
    FleetMember m;
    m.name = name;
    m.device = j.value("device", "");
    m.device_description = j.value("device_description", "");
    m.total_memory_bytes = j.value("total_memory_bytes", int64_t{0});
    m.used_memory_bytes = j.value("used_memory_bytes", int64_t{0});
    m.targets = j.value("targets", std::vector<std::string>{});
    m.datasets = j.value("datasets", std::vector<std::string>{});
    m.drafters = j.value("drafters", std::vector<std::string>{});
    m.running_jobs = j.value("running_jobs", std::vector<std::string>{});
    m.heartbeat_age_seconds = heartbeat_age_micros / 1e6;
    return m;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet server '", name, "' left a malformed heartbeat: ", e.what()));
  }
}

absl::StatusOr<std::vector<FleetMember>> ParseFleetMembers(
    const std::vector<store::FleetServer>& servers) {
  std::vector<FleetMember> members;
  for (const store::FleetServer& s : servers) {
    absl::StatusOr<FleetMember> m = ParseFleetMember(s.name, s.info_json, s.heartbeat_age_micros);
    if (!m.ok()) return m.status();
    members.push_back(*std::move(m));
  }
  return members;
}

}  // namespace dflash::core
