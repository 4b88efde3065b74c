// The web view's inline SVG charts (web/svg_plot.h): one path per series,
// bands and marks where asked, names escaped, and bars to scale.
#include "web/svg_plot.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/text_count.h"

namespace dflash::web {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using ::dflash::testing::Count;

TEST(SvgPlotTest, NothingToDrawIsEmpty) {
  EXPECT_EQ(LinePlot("t", "step", {}), "");
  EXPECT_EQ(LinePlot("t", "step", {{"empty", {}}}), "");
  EXPECT_EQ(BarPlot("t", {}, {}), "");
}

TEST(SvgPlotTest, OnePathPerSeriesWithBandsAndMarks) {
  PlotPoint banded{1, 2.0, true, 1.8, 2.2, false, "step 1"};
  PlotPoint marked{2, 2.5, false, 0, 0, true, "step 2 <worse>"};
  const std::string svg =
      LinePlot("tau <by step>", "step", {{"run \"a\"", {banded, marked}}, {"b", {{1, 1.0}}}});
  EXPECT_EQ(Count(svg, "<path class=\"series\""), 2);
  EXPECT_EQ(Count(svg, "<polygon class=\"band\""), 1);  // only the first series has a band
  EXPECT_EQ(Count(svg, "r=\"6\" fill=\"none\" stroke=\"#b00\""), 1);
  EXPECT_EQ(Count(svg, "<circle"), 3);
  EXPECT_THAT(svg, HasSubstr("<title>tau &lt;by step&gt;</title>"));
  EXPECT_THAT(svg, HasSubstr("data-name=\"run &quot;a&quot;\""));
  EXPECT_THAT(svg, HasSubstr("<title>step 2 &lt;worse&gt;</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("<worse>")));
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 6);
  // The axes span the bands: lowest 1.0 (series b), highest 2.5.
  EXPECT_THAT(svg, HasSubstr(">1</text>"));
  EXPECT_THAT(svg, HasSubstr(">2.5</text>"));
}

// A single point still gets a range (padded by 0.5 each way), never 0/0.
TEST(SvgPlotTest, ASinglePointIsDrawnMidCanvas) {
  const std::string svg = LinePlot("t", "step", {{"s", {{5, 2.0}}}});
  EXPECT_THAT(svg, HasSubstr("d=\"M273.0 124.0\""));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
}

// Bars scale to the largest value over the 200-pixel plot height; NaN is an
// empty bar labelled "-".
TEST(SvgPlotTest, BarsAreToScale) {
  const std::string svg = BarPlot("hist", {"0", "1 <x>"}, {1.0, 2.0});
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 2);
  EXPECT_THAT(svg, HasSubstr("x=\"57.0\" y=\"124.0\" width=\"215.0\" height=\"100.0\""));
  EXPECT_THAT(svg, HasSubstr("y=\"24.0\" width=\"215.0\" height=\"200.0\""));
  EXPECT_THAT(svg, HasSubstr("<title>1 &lt;x&gt;: 2</title>"));
  const std::string flat = BarPlot("h", {"a", "b"}, {0.0, std::nan("")});
  EXPECT_EQ(Count(flat, "height=\"0.0\""), 2);
  EXPECT_THAT(flat, HasSubstr("<title>b: -</title>"));
}

}  // namespace
}  // namespace dflash::web
