// The SVG chart: well-formed XML, one polyline per series, legend names,
// and finite coordinates for degenerate data.
#include "client/svg_chart.h"

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A small well-formedness check: one root element, every tag closed in
// order, attribute values quoted, only the five predefined entities.
// Returns "" when well formed, else what is wrong.
std::string XmlProblem(const std::string& xml) {
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        const size_t semi = xml.find(';', i);
        const std::string ent = xml.substr(i, semi == std::string::npos ? 1 : semi - i + 1);
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" &&
            ent != "&apos;") {
          return "bad entity " + ent;
        }
      }
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(xml[i]))) {
        return "text outside the root";
      }
      ++i;
      continue;
    }
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1))
        return "unbalanced </" + tag.substr(1) + ">";
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    static const std::regex kTag(R"(^([A-Za-z][\w:.-]*)(\s+[A-Za-z][\w:.-]*="[^"<]*")*\s*$)");
    std::smatch m;
    if (!std::regex_match(tag, m, kTag)) return "malformed tag <" + tag + ">";
    if (stack.empty()) ++roots;
    if (!self_closing) stack.push_back(m[1]);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element, got " + std::to_string(roots);
  return "";
}

int Count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

// Every number in coordinate attributes and point lists.
std::vector<std::string> Coordinates(const std::string& svg) {
  std::vector<std::string> out;
  static const std::regex kAttr(R"re(\b(?:x|y|x1|y1|x2|y2|cx|cy|points|d)="([^"]*)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), kAttr), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

void ExpectFinite(const std::string& svg) {
  for (const std::string& c : Coordinates(svg)) {
    EXPECT_THAT(c, Not(HasSubstr("nan"))) << c;
    EXPECT_THAT(c, Not(HasSubstr("inf"))) << c;
  }
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
}

TEST(XmlProblemTest, TheCheckerCatchesBrokenDocuments) {
  EXPECT_EQ(XmlProblem("<a><b/></a>"), "");
  EXPECT_NE(XmlProblem("<a><b></a>"), "");
  EXPECT_NE(XmlProblem("<a></a><a></a>"), "");
  EXPECT_NE(XmlProblem("<a x=1></a>"), "");
  EXPECT_NE(XmlProblem("<a>&nbsp;</a>"), "");
}

TEST(SvgChartTest, OnePolylinePerSeriesWithLegendNames) {
  LineChart c;
  c.title = "Accuracy by position";
  c.x_label = "position";
  c.y_label = "accuracy";
  c.y_min = 0;
  c.y_max = 1;
  c.integer_x = true;
  c.series.push_back({"step-100 (job-a)", {{1, 0.9}, {2, 0.7}, {3, 0.5}}});
  c.series.push_back({"step-200 (job-b)", {{1, 0.95}, {2, 0.8}, {3, 0.6}}});
  const std::string svg = RenderLineChart(c);
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<svg "), 1);
  EXPECT_THAT(svg, HasSubstr("xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(svg, "<polyline "), 2);
  EXPECT_EQ(Count(svg, "<circle "), 6);  // a marker per point
  EXPECT_EQ(Count(svg, ">step-100 (job-a)</text>"), 1);
  EXPECT_EQ(Count(svg, ">step-200 (job-b)</text>"), 1);
  EXPECT_THAT(svg, HasSubstr(">Accuracy by position</text>"));
  EXPECT_THAT(svg, HasSubstr(">position</text>"));
  // Fixed 0..1 axis: ticks 0.0 .. 1.0, and integer x ticks 1, 2, 3.
  EXPECT_THAT(svg, HasSubstr(">0.0</text>"));
  EXPECT_THAT(svg, HasSubstr(">1.0</text>"));
  for (const char* t : {">1</text>", ">2</text>", ">3</text>"}) EXPECT_THAT(svg, HasSubstr(t));
  ExpectFinite(svg);
}

TEST(SvgChartTest, HigherValuesAreDrawnHigher) {
  LineChart c;
  c.series.push_back({"s", {{0, 1}, {1, 2}}});
  const std::string svg = RenderLineChart(c);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(svg, m, std::regex(R"re(points="([\d.]+),([\d.]+) ([\d.]+),([\d.]+)")re")));
  EXPECT_LT(std::stod(m[1]), std::stod(m[3]));  // x grows to the right
  EXPECT_GT(std::stod(m[2]), std::stod(m[4]));  // y grows upwards (smaller svg y)
}

TEST(SvgChartTest, DegenerateInputsStayFinite) {
  const std::vector<std::vector<std::pair<double, double>>> cases = {
      {},                                 // empty series
      {{100, 2.5}},                       // one point
      {{1, 3}, {2, 3}, {3, 3}},           // all equal
      {{5, 0}, {5, 0}},                   // one x, zero y
      {{1, NAN}, {2, INFINITY}, {3, 1}},  // non-finite values are skipped
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    LineChart c;
    c.integer_x = i % 2 == 0;
    c.series.push_back({"only", cases[i]});
    const std::string svg = RenderLineChart(c);
    EXPECT_EQ(XmlProblem(svg), "") << i;
    EXPECT_EQ(Count(svg, "<polyline "), 1) << i;
    ExpectFinite(svg);
  }
  LineChart none;  // no series at all
  const std::string svg = RenderLineChart(none);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(Count(svg, "<polyline "), 0);
  ExpectFinite(svg);
}

TEST(SvgChartTest, NamesAreEscaped) {
  LineChart c;
  c.title = "a < b & \"c\"";
  c.series.push_back({"<script>x</script>", {{1, 1}, {2, 2}}});
  const std::string svg = RenderLineChart(c);
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  EXPECT_THAT(svg, HasSubstr("&lt;script&gt;x&lt;/script&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("<script>")));
}

TEST(SvgChartTest, NiceTicksUseOneTwoFiveSteps) {
  EXPECT_THAT(NiceTicks(0, 1, 5), ElementsAre(0, 0.2, 0.4, 0.6, 0.8, 1.0));
  EXPECT_THAT(NiceTicks(100, 400, 6), ElementsAre(100, 150, 200, 250, 300, 350, 400));
  EXPECT_THAT(NiceTicks(-1, 1, 4), ElementsAre(-1, -0.5, 0, 0.5, 1));
  EXPECT_THAT(NiceTicks(3, 3, 5), ElementsAre(3));
  EXPECT_TRUE(NiceTicks(NAN, 1, 5).empty());
}

}  // namespace
}  // namespace dflash::client
