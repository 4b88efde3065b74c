// The web view's HTML vocabulary (web/html.h): escaping, URL encoding, the
// page shell and tables, and how numbers, intervals, times and sampling
// settings are written.
#include "web/html.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::web {
namespace {

using ::testing::HasSubstr;

// Moved from views_test.cc.
TEST(WebHtmlTest, EscapesEverythingAUserNames) {
  EXPECT_EQ(Escape("<script>alert(1)</script> & \"x\" 'y'"),
            "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot; &#39;y&#39;");
  EXPECT_EQ(UrlEncode("a b/<c>"), "a%20b%2F%3Cc%3E");
  EXPECT_EQ(Link("/runs/a\"b", "<b>"), "<a href=\"/runs/a&quot;b\">&lt;b&gt;</a>");
}

TEST(WebHtmlTest, UrlEncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(UrlEncode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(UrlEncode("run?x=1&y#z"), "run%3Fx%3D1%26y%23z");
  EXPECT_EQ(UrlEncode("\xc3\xa9"), "%C3%A9");  // each UTF-8 byte
  EXPECT_EQ(UrlEncode(""), "");
}

TEST(WebHtmlTest, PageShellAndTableEscapeTheirText) {
  const std::string page = PageShell("run <a>", "<p>body</p>", "/runs/a.json");
  EXPECT_THAT(page, HasSubstr("<title>run &lt;a&gt; - dflash-evald</title>"));
  EXPECT_THAT(page, HasSubstr("<h1>run &lt;a&gt;</h1><p>body</p></body></html>"));
  EXPECT_THAT(page, HasSubstr("<a href=\"/runs/a.json\">JSON</a></nav>"));
  EXPECT_THAT(PageShell("t", "", ""), HasSubstr("resident objects</a></nav>"));
  EXPECT_EQ(Table({"a<b", "n"}, {{"<i>x</i>", "1"}}),
            "<table><tr><th>a&lt;b</th><th>n</th></tr><tr><td><i>x</i></td><td>1</td></tr>"
            "</table>");
  EXPECT_EQ(Table({"h"}, {}), "<table><tr><th>h</th></tr></table>");
}

TEST(WebHtmlTest, NumbersIntervalsAndTimes) {
  EXPECT_EQ(Num(2.34567), "2.346");
  EXPECT_EQ(Num(3), "3");
  EXPECT_EQ(Num(std::nan("")), "-");
  EXPECT_EQ(WithInterval(2.34567, types::Interval{2.1012, 2.5119}), "2.346 [2.101, 2.512]");
  EXPECT_EQ(WithInterval(2.5, std::nullopt), "2.5");
  EXPECT_EQ(Time(1796014502000000), "2026-11-30 04:55:02Z");
  EXPECT_EQ(Time(0), "-");
  EXPECT_EQ(Time(-5), "-");
}

TEST(WebHtmlTest, SettingTextSpellsTheCliForm) {
  EXPECT_EQ(SettingText(types::SamplingSetting{}), "t=0");
  EXPECT_EQ(SettingText({0.6, 0.95, 20, types::ProposalPolicy::kDefault, true, ""}),
            "t=0.6,p=0.95,k=20");
  EXPECT_EQ(SettingText({1, 1, 0, types::ProposalPolicy::kMatch, true, "vllm"}),
            "t=1 match (vllm)");
}

}  // namespace
}  // namespace dflash::web
