// File: html.h
// The web view's HTML vocabulary (docs/web.md): escaping, the page shell,
// tables and number cells. Every string from a user (run names, paths,
// labels, messages) goes through Escape before it reaches a page.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "types/eval_types.h"

namespace dflash::web {

// &, <, >, " and ' as entities: safe in text and in quoted attributes.
std::string Escape(absl::string_view text);
// Percent-encodes a path segment or query value (RFC 3986 unreserved kept).
std::string UrlEncode(absl::string_view text);

// A whole page: title, navigation, `body` (already HTML), and a link to the
// page's JSON twin.
std::string PageShell(absl::string_view title, absl::string_view body, absl::string_view json_url);

// <a href="url">text</a>, both escaped.
std::string Link(absl::string_view url, absl::string_view text);

// One key-value row of a two-column table: <tr><th>key</th><td>value</td></tr>
// (the key escaped, the value already HTML).
std::string Row2(const std::string& k, const std::string& v_html);
// A table: header cells (text, escaped) and rows of cells (already HTML).
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);

// "2.3456" (4 significant digits); "-" for NaN.
std::string Num(double v);
// "2.346 [2.101, 2.512]" or "2.346" without an interval.
std::string WithInterval(double v, const std::optional<types::Interval>& ci);
// "2026-12-04 03:31:51Z"; "-" for 0.
std::string Time(int64_t unix_micros);
// A sampling setting as the CLI's --sampling spells it: "t=0.6,p=0.95,k=20",
// then the policy and the engine preset when set ("t=1 match (vllm)").
std::string SettingText(const types::SamplingSetting& s);

}  // namespace dflash::web
