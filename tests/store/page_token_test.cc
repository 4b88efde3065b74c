// List paging, the same in every store (store/page_token.h): tokens round-trip,
// a token from elsewhere or for the other order is refused by name, the page
// size is clamped, and the list query's text.
#include "store/page_token.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::store {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

TEST(PageTokenTest, TokensRoundTripInTheirOwnOrder) {
  for (bool by_step : {true, false}) {
    // An id may hold the separator: only the first two split.
    const std::string token = MakePageToken(by_step, -42, "ev-1|x");
    int64_t key = 0;
    std::string id;
    ASSERT_THAT(ParsePageToken(token, by_step, &key, &id), IsOk());
    EXPECT_EQ(key, -42);
    EXPECT_EQ(id, "ev-1|x");
  }
  EXPECT_EQ(MakePageToken(true, 7, "ev-1"), absl::WebSafeBase64Escape("s|7|ev-1"));
  EXPECT_EQ(MakePageToken(false, 7, "ev-1"), absl::WebSafeBase64Escape("c|7|ev-1"));
}

TEST(PageTokenTest, ForeignTokensAreRefused) {
  int64_t key = 0;
  std::string id;
  for (const std::string& token : {std::string("not a token!"), absl::WebSafeBase64Escape("s|7"),
                                   absl::WebSafeBase64Escape("x|7|ev-1"),
                                   absl::WebSafeBase64Escape("s|seven|ev-1"), std::string("")}) {
    EXPECT_THAT(
        ParsePageToken(token, true, &key, &id),
        StatusIs(kInvalid, Eq("page_token '" + token + "' is not a token this server issued")))
        << token;
  }
  const std::string by_step = MakePageToken(true, 1, "ev-1");
  EXPECT_THAT(ParsePageToken(by_step, false, &key, &id),
              StatusIs(kInvalid, Eq("page_token '" + by_step +
                                    "' was issued for order_by_step order; repeat the query with "
                                    "the same order")));
  const std::string newest = MakePageToken(false, 1, "ev-1");
  EXPECT_THAT(ParsePageToken(newest, true, &key, &id),
              StatusIs(kInvalid, Eq("page_token '" + newest +
                                    "' was issued for newest-first order; repeat the query with "
                                    "the same order")));
  EXPECT_EQ(id, "");  // nothing written on refusal
}

TEST(PageTokenTest, PageSizeIsClamped) {
  EXPECT_EQ(PageSize(0), 50);
  EXPECT_EQ(PageSize(-3), 50);
  EXPECT_EQ(PageSize(1), 1);
  EXPECT_EQ(PageSize(1000), 1000);
  EXPECT_EQ(PageSize(1001), 1000);
}

TEST(PageTokenTest, ListSqlReadsOneRowMoreThanThePage) {
  EXPECT_EQ(ListSql({}, false, 50),
            "SELECT record, step, create_micros, id FROM jobs ORDER BY create_micros DESC, id "
            "DESC LIMIT 51");
  EXPECT_EQ(ListSql({"run = ?", "step > ?"}, true, 2),
            "SELECT record, step, create_micros, id FROM jobs WHERE run = ? AND step > ? ORDER "
            "BY step ASC, id ASC LIMIT 3");
}

}  // namespace
}  // namespace dflash::store
