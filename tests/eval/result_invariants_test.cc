// Every result's invariants (eval/result_invariants.h): a consistent result
// passes; each broken one is InternalError naming both numbers.
#include "eval/result_invariants.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

// B = 3: 4 blocks with n = 0, 1, 2, 2 over two samples.
types::EvalResult Consistent() {
  types::EvalResult r;
  r.block_size = 3;
  r.blocks = 4;
  r.accepted_histogram = {1, 1, 2};
  r.positions.resize(2);
  r.positions[0].accepted = 3;                     // n >= 1
  r.positions[1].accepted = 2;                     // n >= 2
  r.accept_length_pooled = 1 + 3.0 / 4 + 2.0 / 4;  // = (1 + 2 + 3 + 3) / 4
  r.per_sample = {{0, 2, 1.5}, {1, 2, 3.0}};
  r.tau = 2.25;
  types::SampledAcceptance s;
  s.marginal_accept = {0.5, 0.25};
  s.histogram = {0.5, 0.25, 0.25};
  s.expected_accept_length_pooled = 1.75;
  r.sampling.push_back(s);
  return r;
}

TEST(ResultInvariantsTest, ConsistentResultPasses) {
  EXPECT_TRUE(CheckResultInvariants(Consistent()).ok());
}

TEST(ResultInvariantsTest, EachBrokenInvariantIsAnInternalError) {
  const auto internal = absl::StatusCode::kInternal;
  types::EvalResult r = Consistent();
  r.accepted_histogram = {1, 1, 1};
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("the histogram counts 3 blocks, the result 4")));
  r = Consistent();
  r.positions[1].accepted = 1;
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("acceptance[2] counts 1 blocks, the histogram 2 with "
                                           "n >= 2")));
  r = Consistent();
  r.accept_length_pooled = 2.0;
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("1 + sum of marginal acceptance is 2.25, the pooled "
                                           "accept length 2")));
  r = Consistent();
  r.tau = 2.0;
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("tau is 2, the mean of 2 per-sample means 2.25")));
  r = Consistent();
  r.sampling[0].expected_accept_length_pooled = 1.8;
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("1 + sum of marginal acceptance is 1.75, the expected "
                                           "accept length 1.8")));
  r = Consistent();
  r.sampling[0].marginal_accept = {0.25, 0.5};
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(internal, HasSubstr("a marginal acceptance of 0.5 after 0.25")));
}

TEST(ResultInvariantsTest, ReplayMayBeCappedBelowNeverAbove) {
  types::EvalResult r = Consistent();
  r.mode = types::Mode::kReplay;
  r.accept_length_pooled = 2.0;  // the last step capped
  EXPECT_TRUE(CheckResultInvariants(r).ok());
  r.accept_length_pooled = 2.5;
  EXPECT_THAT(CheckResultInvariants(r),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("never higher")));
}

}  // namespace
}  // namespace dflash::eval
