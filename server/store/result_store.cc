#include "store/result_store.h"

#include "absl/strings/str_cat.h"

namespace dflash::store {
namespace {

absl::Status NotShared(const char* what) {
  return absl::UnimplementedError(absl::StrCat(
      what, " needs a store shared by a fleet (--store postgresql://...); this one is not"));
}

}  // namespace

absl::StatusOr<std::optional<types::JobRecord>> ResultStore::Claim(const ClaimRequest&) {
  return NotShared("claiming jobs");
}
absl::StatusOr<bool> ResultStore::PutLeased(const types::JobRecord&, int64_t) {
  return NotShared("leases");
}
absl::StatusOr<types::JobRecord> ResultStore::RequestCancel(const std::string&, int64_t) {
  return NotShared("cancelling through the store");
}
absl::Status ResultStore::Heartbeat(const std::string&, const std::string&) {
  return NotShared("the servers table");
}
absl::StatusOr<std::vector<FleetServer>> ResultStore::LiveServers(int64_t) {
  return NotShared("the servers table");
}
absl::Status ResultStore::Leave(const std::string&) {
  return NotShared("the servers table");
}
absl::StatusOr<int64_t> ResultStore::CountQueued() {
  return NotShared("counting the fleet's queue");
}

}  // namespace dflash::store
