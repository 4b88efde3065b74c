#include "fleet/refusal.h"

namespace dflash::fleet {
namespace {

constexpr char kRefusalPayload[] = "dflash.jobs/refusal";

}  // namespace

absl::Status Refusal(absl::Status cause) {
  cause.SetPayload(kRefusalPayload, absl::Cord("1"));
  return cause;
}

bool IsRefusal(const absl::Status& status) {
  return status.GetPayload(kRefusalPayload).has_value();
}

}  // namespace dflash::fleet
