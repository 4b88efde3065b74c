#include "store/page_token.h"

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dflash::store {

std::string MakePageToken(bool by_step, int64_t key, const std::string& id) {
  return absl::WebSafeBase64Escape(absl::StrCat(by_step ? "s" : "c", "|", key, "|", id));
}

absl::Status ParsePageToken(const std::string& token, bool by_step, int64_t* key, std::string* id) {
  std::string raw;
  std::vector<std::string> parts;
  if (absl::WebSafeBase64Unescape(token, &raw)) {
    parts = absl::StrSplit(raw, absl::MaxSplits('|', 2));
  }
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], key) ||
      (parts[0] != "s" && parts[0] != "c")) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token '", token, "' is not a token this server issued"));
  }
  if ((parts[0] == "s") != by_step) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token '", token, "' was issued for ",
                     parts[0] == "s" ? "order_by_step" : "newest-first",
                     " order; repeat the query with the same order"));
  }
  *id = parts[2];
  return absl::OkStatus();
}

int PageSize(int requested) {
  return std::clamp(requested <= 0 ? 50 : requested, 1, 1000);
}

std::string ListSql(const std::vector<std::string>& where, bool by_step, int page_size) {
  std::string sql = "SELECT record, step, create_micros, id FROM jobs";
  if (!where.empty()) absl::StrAppend(&sql, " WHERE ", absl::StrJoin(where, " AND "));
  absl::StrAppend(&sql,
                  by_step ? " ORDER BY step ASC, id ASC" : " ORDER BY create_micros DESC, id DESC",
                  " LIMIT ", page_size + 1);
  return sql;
}

}  // namespace dflash::store
