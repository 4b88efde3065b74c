// File: page_token.h
// List page tokens, the same in every store: web-safe base64 of
// "<order>|<sort key>|<id>", opaque to clients.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace dflash::store {

std::string MakePageToken(bool by_step, int64_t key, const std::string& id);
// InvalidArgument for a token this server did not issue or one issued for
// the other order.
absl::Status ParsePageToken(const std::string& token, bool by_step, int64_t* key, std::string* id);

}  // namespace dflash::store
