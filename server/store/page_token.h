// File: page_token.h
// List page tokens, the same in every store: web-safe base64 of
// "<order>|<sort key>|<id>", opaque to clients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace dflash::store {

std::string MakePageToken(bool by_step, int64_t key, const std::string& id);
// InvalidArgument for a token this server did not issue or one issued for
// the other order.
absl::Status ParsePageToken(const std::string& token, bool by_step, int64_t* key, std::string* id);

// The rows a List page reads: ListQuery.page_size clamped to 1..1000 (0 = 50).
int PageSize(int requested);
// "SELECT record, step, create_micros, id FROM jobs [WHERE ...] ORDER BY ...
// LIMIT page_size + 1" (one more row says whether a next page exists), the
// same text in every store; `where` holds the conditions, ANDed.
std::string ListSql(const std::vector<std::string>& where, bool by_step, int page_size);

}  // namespace dflash::store
