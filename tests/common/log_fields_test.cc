// ScopedLogFields and CurrentLogFields (common/log_fields.h): what each kind
// of value stores, the order of nested scopes, that a scope removes exactly
// what it added, and that the fields belong to the thread that set them.
#include "common/log_fields.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The fields in force as "key=value" (numbers as "key=#value"), outermost
// first, so one comparison checks keys, values, kinds and order.
std::vector<std::string> Current() {
  std::vector<std::string> out;
  for (const LogField& f : CurrentLogFields()) {
    out.push_back(f.key + (f.is_number ? "=#" + std::to_string(f.number) : "=" + f.text));
  }
  return out;
}

TEST(LogFieldsTest, NoFieldsOutsideAnyScope) {
  EXPECT_THAT(CurrentLogFields(), IsEmpty());
}

TEST(LogFieldsTest, EachKindOfValueStoresTextOrNumber) {
  ScopedLogFields scope({{"job", std::string("ev-1")},
                         {"peer", "ipv4:127.0.0.1:5"},
                         {"none", static_cast<const char*>(nullptr)},
                         {"seconds", 1.5},
                         {"blocks", int64_t{9007199254740993}}});
  const std::vector<LogField>& f = CurrentLogFields();
  ASSERT_EQ(f.size(), 5u);

  EXPECT_EQ(f[0].key, "job");
  EXPECT_EQ(f[0].text, "ev-1");
  EXPECT_FALSE(f[0].is_number);
  EXPECT_EQ(f[0].number, 0);

  EXPECT_EQ(f[1].key, "peer");
  EXPECT_EQ(f[1].text, "ipv4:127.0.0.1:5");
  EXPECT_FALSE(f[1].is_number);

  // A null C string is an empty text, not a crash.
  EXPECT_EQ(f[2].key, "none");
  EXPECT_EQ(f[2].text, "");
  EXPECT_FALSE(f[2].is_number);

  EXPECT_EQ(f[3].key, "seconds");
  EXPECT_TRUE(f[3].is_number);
  EXPECT_EQ(f[3].number, 1.5);
  EXPECT_EQ(f[3].text, "");

  // An int64 is kept as a double: 2^53 + 1 rounds to 2^53.
  EXPECT_EQ(f[4].key, "blocks");
  EXPECT_TRUE(f[4].is_number);
  EXPECT_EQ(f[4].number, 9007199254740992.0);
}

TEST(LogFieldsTest, NestedScopesStackInnerLastAndUnwindInOrder) {
  {
    ScopedLogFields outer({{"method", "SubmitEval"}, {"peer", "p"}});
    EXPECT_THAT(Current(), ElementsAre("method=SubmitEval", "peer=p"));
    {
      ScopedLogFields inner({{"job", "ev-2"}, {"step", int64_t{40}}});
      EXPECT_THAT(Current(),
                  ElementsAre("method=SubmitEval", "peer=p", "job=ev-2", "step=#40.000000"));
      {
        // A key already in force is added again, not replaced. (One field is
        // spelled as a vector: {{"k", "v"}} alone also reads as vector's
        // (first, last) constructor over two C strings.)
        ScopedLogFields again(std::vector<LogField>{{"job", "ev-3"}});
        EXPECT_THAT(Current(), ElementsAre("method=SubmitEval", "peer=p", "job=ev-2",
                                           "step=#40.000000", "job=ev-3"));
      }
      EXPECT_THAT(Current(),
                  ElementsAre("method=SubmitEval", "peer=p", "job=ev-2", "step=#40.000000"));
    }
    EXPECT_THAT(Current(), ElementsAre("method=SubmitEval", "peer=p"));
  }
  EXPECT_THAT(CurrentLogFields(), IsEmpty());
}

TEST(LogFieldsTest, AnEmptyScopeAddsAndRemovesNothing) {
  ScopedLogFields outer(std::vector<LogField>{{"a", "1"}});
  {
    ScopedLogFields empty(std::vector<LogField>{});
    EXPECT_THAT(Current(), ElementsAre("a=1"));
  }
  EXPECT_THAT(Current(), ElementsAre("a=1"));
}

TEST(LogFieldsTest, FieldsBelongToTheThreadThatSetThem) {
  ScopedLogFields mine(std::vector<LogField>{{"thread", "main"}});
  std::vector<std::string> seen_there_first, seen_there_inside;
  std::thread other([&] {
    seen_there_first = Current();
    ScopedLogFields theirs(std::vector<LogField>{{"thread", "other"}});
    seen_there_inside = Current();
  });
  other.join();
  EXPECT_THAT(seen_there_first, IsEmpty());
  EXPECT_THAT(seen_there_inside, ElementsAre("thread=other"));
  EXPECT_THAT(Current(), ElementsAre("thread=main"));
}

}  // namespace
}  // namespace dflash
