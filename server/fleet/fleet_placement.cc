// File: fleet_placement.cc
// FleetPlacement::Place (fleet_placement.h): which of a fleet's live servers
// may run a job, from the resident objects it names, and the placement text
// it shows.
#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fix_hint.h"
#include "common/status_macros.h"
#include "core/fleet_member.h"
#include "core/pick_listed.h"
#include "fleet/fleet_placement.h"
#include "resident/resource.h"

namespace dflash::fleet {
namespace {

using core::FleetMember;

using types::JobRecord;

// Names of the live servers holding `name` of `kind` ("" for the target: the
// servers holding exactly one).
std::vector<std::string> Holders(const std::vector<FleetMember>& fleet, resident::ResourceKind kind,
                                 const std::string& name) {
  std::vector<std::string> holders;
  for (const FleetMember& m : fleet) {
    const std::vector<std::string>& names = kind == resident::ResourceKind::kTarget    ? m.targets
                                            : kind == resident::ResourceKind::kDataset ? m.datasets
                                                                                       : m.drafters;
    const bool holds = name.empty() ? names.size() == 1
                                    : std::find(names.begin(), names.end(), name) != names.end();
    if (holds) holders.push_back(m.name);
  }
  return holders;
}

}  // namespace

absl::Status FleetPlacement::Place(JobRecord& record, jobs::JobQueue& queue) {
  RETURN_IF_ERROR(RecordFleetPaths(objects_, record.request));
  const types::EvalParams& r = record.request.params;
  ASSIGN_OR_RETURN(std::vector<store::FleetServer> servers, queue.FleetServers());
  ASSIGN_OR_RETURN(std::vector<FleetMember> fleet, core::ParseFleetMembers(servers));
  std::vector<std::string> needs, loads;
  std::vector<std::string> where;  // servers holding all of them
  bool first = true;
  const std::tuple<resident::ResourceKind, std::string, std::string> named[] = {
      {resident::ResourceKind::kTarget, r.target, record.request.target_path},
      {resident::ResourceKind::kDataset, r.dataset, record.request.dataset_path},
      {resident::ResourceKind::kDrafter, r.drafter, ""}};
  for (const auto& [kind, name, path] : named) {
    if (kind == resident::ResourceKind::kDrafter && name.empty()) continue;  // a checkpoint path
    if (!path.empty()) {                                                     // any server loads it
      loads.push_back(
          absl::StrCat(resident::ResourceKindName(kind), " '", name, "' from '", path, "'"));
      continue;
    }
    // Here first: the same words as a single server when nobody has it.
    absl::StatusOr<resident::ResourceInfo> here = core::PickListed(core_, kind, name);
    if (here.ok() && kind == resident::ResourceKind::kDataset)
      record.dataset_fingerprint = here->fingerprint;
    if (here.ok() && kind == resident::ResourceKind::kDrafter)
      record.drafter_fingerprint = here->fingerprint;
    std::vector<std::string> holders = Holders(fleet, kind, name);
    if (holders.empty() && !here.ok()) {
      absl::Status nowhere(here.status().code(),
                           absl::StrCat(here.status().message(), "; no live server of the fleet ",
                                        "holds it either"));
      if (std::optional<FixHint> hint = GetFixHint(here.status())) {
        nowhere = WithFixHint(nowhere, *hint);
      }
      return nowhere;
    }
    // This server counts as soon as it holds the object: the servers table
    // hears of a load only at the next heartbeat.
    const std::string& self = backend_.server();
    if (here.ok() && std::find(holders.begin(), holders.end(), self) == holders.end()) {
      holders.push_back(self);
    }
    needs.push_back(name.empty() ? absl::StrCat("one ", resident::ResourceKindName(kind), " only")
                                 : absl::StrCat(resident::ResourceKindName(kind), " '", name, "'"));
    if (first) {
      where = holders;
    } else {
      std::vector<std::string> both;
      for (const std::string& h : where) {
        if (std::find(holders.begin(), holders.end(), h) != holders.end()) both.push_back(h);
      }
      where = both;
    }
    first = false;
  }
  if (!first && where.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no live server of the fleet holds all of ", absl::StrJoin(needs, ", "),
                     "; load them on one server, or name the drafter by checkpoint path"));
  }
  // Pinned: names only some servers hold (loaded there by name, not paths
  // nor names of the fleet's config) keep the job waiting for those servers.
  const std::string load_text =
      loads.empty() ? ""
                    : absl::StrCat("loads ", absl::StrJoin(loads, ", "), " where not resident");
  if (first) {
    record.placement = absl::StrCat("runs on any server; ", load_text);
    return absl::OkStatus();
  }
  record.placement =
      absl::StrCat("runs only on a server holding ", absl::StrJoin(needs, ", "),
                   " (now: ", absl::StrJoin(where, ", "), ")", load_text.empty() ? "" : "; ",
                   load_text, "; name objects by path to run on any server");
  return absl::OkStatus();
}

}  // namespace dflash::fleet
