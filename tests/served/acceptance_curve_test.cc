// One measured acceptance (served/acceptance_curve.h): conditional rates from
// the marginal ones, and each invariant a curve must hold, broken one at a
// time, as an Internal error naming the curve, the job and the number.
#include "served/acceptance_curve.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::served {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::DoubleEq;
using ::testing::Eq;

constexpr auto kInternal = absl::StatusCode::kInternal;

// B = 4: marginal 0.9, 0.7, 0.4; 1 + their sum = 3.0.
AcceptanceCurve Curve() {
  AcceptanceCurve c;
  c.label = "greedy";
  c.job_id = "ev-1";
  c.block_size = 4;
  c.blocks = 100;
  c.marginal = {0.9, 0.7, 0.4};
  c.histogram = {0.1, 0.2, 0.3, 0.4};
  c.mean_accept_length = 3.0;
  return c;
}

// Moved from calibration_test.cc.
TEST(ConditionalRates, UnavailableAfterZero) {
  auto c = ConditionalRates({0.5, 0.0, 0.0});
  EXPECT_THAT(*c[0], DoubleEq(0.5));
  EXPECT_THAT(*c[1], DoubleEq(0.0));
  EXPECT_FALSE(c[2].has_value());
}

TEST(ConditionalRates, EachRateIsOverThePreviousMarginal) {
  auto c = ConditionalRates({0.8, 0.4, 0.1});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_THAT(*c[0], DoubleEq(0.8));
  EXPECT_THAT(*c[1], DoubleEq(0.5));
  EXPECT_THAT(*c[2], DoubleEq(0.25));
  EXPECT_TRUE(ConditionalRates({}).empty());
}

TEST(CheckCurveInvariants, AConsistentCurvePasses) {
  EXPECT_THAT(CheckCurveInvariants(Curve()), IsOk());
  AcceptanceCurve c = Curve();
  c.histogram.clear();  // no histogram: nothing to sum
  EXPECT_THAT(CheckCurveInvariants(c), IsOk());
  c = Curve();
  c.blocks = 0;  // nothing measured: the histogram is not checked
  c.histogram = {0, 0, 0, 0};
  EXPECT_THAT(CheckCurveInvariants(c), IsOk());
}

TEST(CheckCurveInvariants, EachBrokenInvariantIsNamed) {
  auto broken = [](AcceptanceCurve c, const std::string& message) {
    EXPECT_THAT(CheckCurveInvariants(c), StatusIs(kInternal, Eq(message)));
  };
  AcceptanceCurve c = Curve();
  c.marginal = {0.9, 0.7};
  broken(c, "curve 'greedy' of job ev-1: 2 marginal rates for block size 4 (want 3)");
  c = Curve();
  c.marginal = {1.5, 0.7, 0.4};
  broken(c, "curve 'greedy' of job ev-1: marginal[0] = 1.5 is not in [0, 1]");
  c.marginal = {0.9, 0.7, -0.1};
  broken(c, "curve 'greedy' of job ev-1: marginal[2] = -0.1 is not in [0, 1]");
  c.marginal = {0.5, 0.7, 0.4};
  c.mean_accept_length = 2.6;
  broken(c,
         "curve 'greedy' of job ev-1: marginal[1] = 0.7 exceeds marginal[0] = 0.5 (accepting "
         "position 3 needs every earlier one)");
  c = Curve();
  c.mean_accept_length = 2.5;
  broken(c, "curve 'greedy' of job ev-1: 1 + sum(marginal) = 3 but the mean accept length is 2.5");
  c = Curve();
  c.histogram = {0.1, 0.2, 0.3, 0.3};
  broken(c, "curve 'greedy' of job ev-1: histogram sums to 0.9");
}

}  // namespace
}  // namespace dflash::served
