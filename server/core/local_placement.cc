#include "core/local_placement.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "core/pick_listed.h"
#include "resident/resource.h"

namespace dflash::core {

using types::JobRecord;
using types::JobState;

absl::Status LocalPlacement::Place(JobRecord& record, jobs::JobQueue& queue) {
  const types::EvalParams& r = record.request.params;
  if (!(record.request.dataset_path.empty() && record.request.target_path.empty())) {
    return absl::FailedPreconditionError(
        "dataset_path and target_path name objects for a fleet's servers to load on demand; this "
        "server has no fleet (see --store): load them and name them with dataset and target");
  }
  ASSIGN_OR_RETURN(resident::ResourceInfo target,
                   PickListed(core_, resident::ResourceKind::kTarget, r.target));
  std::vector<std::string> resident;
  for (const resident::ResourceInfo& d : core_.ListResources(resident::ResourceKind::kDataset)) {
    resident.push_back(d.name);
  }
  ASSIGN_OR_RETURN(record.request.suite_datasets, ResolveSuite(r.dataset, suites_, resident));
  if (record.request.suite_datasets.empty()) {
    ASSIGN_OR_RETURN(resident::ResourceInfo dataset,
                     PickListed(core_, resident::ResourceKind::kDataset, r.dataset));
    record.dataset_fingerprint = dataset.fingerprint;
  } else {
    std::vector<std::string> fingerprints;
    for (const std::string& name : record.request.suite_datasets) {
      ASSIGN_OR_RETURN(resident::ResourceInfo dataset,
                       PickListed(core_, resident::ResourceKind::kDataset, name), "suite '",
                       r.dataset, "'");
      fingerprints.push_back(dataset.fingerprint);
    }
    record.dataset_fingerprint = absl::StrJoin(fingerprints, ",");
    if (!record.request.gate.reference.empty()) {
      return absl::InvalidArgumentError(
          "gate applies to one dataset; gate each dataset of the suite in its own job");
    }
  }
  if (!r.drafter.empty()) {
    ASSIGN_OR_RETURN(resident::ResourceInfo drafter,
                     PickListed(core_, resident::ResourceKind::kDrafter, r.drafter));
    record.drafter_fingerprint = drafter.fingerprint;
  }
  record.device = target.device;
  const types::GateSpec& gate = record.request.gate;
  if (!gate.reference.empty() && gate.reference != "best" && gate.reference != "previous") {
    ASSIGN_OR_RETURN(JobRecord ref, queue.Get(gate.reference), "gate reference");
    if (ref.state != JobState::kSucceeded) {
      return absl::FailedPreconditionError(absl::StrCat("gate reference ", gate.reference, " is ",
                                                        types::JobStateName(ref.state),
                                                        "; the reference must have SUCCEEDED"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dflash::core
