// Proposal policy names (types/proposal_policy.h): the four spellings parse
// back; "default" is a name but not a choice, and an unknown name lists the
// known ones.
#include "types/proposal_policy.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::types {
namespace {

using ::dflash::testing::StatusIs;

TEST(ProposalPolicyTest, NamesParseBack) {
  for (ProposalPolicy p : {ProposalPolicy::kSample, ProposalPolicy::kArgmax,
                           ProposalPolicy::kSelector, ProposalPolicy::kMatch}) {
    ASSERT_OK_AND_ASSIGN(ProposalPolicy parsed, ParsePolicy(PolicyName(p)));
    EXPECT_EQ(parsed, p) << PolicyName(p);
  }
  EXPECT_STREQ(PolicyName(ProposalPolicy::kSample), "sample");
  EXPECT_STREQ(PolicyName(ProposalPolicy::kSelector), "selector");
  EXPECT_STREQ(PolicyName(ProposalPolicy::kDefault), "default");
}

TEST(ProposalPolicyTest, DefaultAndUnknownNamesAreRefused) {
  for (const char* name : {"default", "Argmax", "greedy", ""}) {
    EXPECT_THAT(ParsePolicy(name),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::Eq(std::string("unknown policy '") + name +
                                       "' (known: sample, argmax, selector (DFlash 2), match)")));
  }
}

}  // namespace
}  // namespace dflash::types
