// File: html.cc
#include "web/html.h"

#include <cctype>
#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "types/proposal_policy.h"

namespace dflash::web {
namespace {

constexpr char kStyle[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
    "nav a{margin-right:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right}"
    "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
    ".worse{color:#b00}.pass{color:#070}.note{color:#666}svg{margin:.5em 0}"
    ".error{border:1px solid #b00;padding:.5em 1em;background:#fee}";

}  // namespace

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string UrlEncode(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

std::string PageShell(absl::string_view title, absl::string_view body, absl::string_view json_url) {
  return absl::StrCat("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>", Escape(title),
                      " - dflash-evald</title><style>", kStyle, "</style></head><body><nav>",
                      Link("/", "runs"), Link("/resources", "resident objects"),
                      json_url.empty() ? "" : Link(json_url, "JSON"), "</nav><h1>", Escape(title),
                      "</h1>", body, "</body></html>");
}

std::string Link(absl::string_view url, absl::string_view text) {
  return absl::StrCat("<a href=\"", Escape(url), "\">", Escape(text), "</a>");
}

std::string Row2(const std::string& k, const std::string& v_html) {
  return absl::StrCat("<tr><th>", Escape(k), "</th><td>", v_html, "</td></tr>");
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table><tr>";
  for (const std::string& h : header) absl::StrAppend(&out, "<th>", Escape(h), "</th>");
  absl::StrAppend(&out, "</tr>");
  for (const auto& row : rows) {
    absl::StrAppend(&out, "<tr>");
    for (const std::string& cell : row) absl::StrAppend(&out, "<td>", cell, "</td>");
    absl::StrAppend(&out, "</tr>");
  }
  return absl::StrCat(out, "</table>");
}

std::string Num(double v) {
  return std::isnan(v) ? "-" : absl::StrFormat("%.4g", v);
}

std::string WithInterval(double v, const std::optional<types::Interval>& ci) {
  if (!ci) return Num(v);
  return absl::StrFormat("%s [%s, %s]", Num(v), Num(ci->lo), Num(ci->hi));
}

std::string Time(int64_t unix_micros) {
  if (unix_micros <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_micros / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string SettingText(const types::SamplingSetting& s) {
  std::string out = absl::StrFormat("t=%g", s.temperature);
  if (s.top_p > 0 && s.top_p < 1) absl::StrAppend(&out, absl::StrFormat(",p=%g", s.top_p));
  if (s.top_k > 0) absl::StrAppend(&out, ",k=", s.top_k);
  if (s.policy != types::ProposalPolicy::kDefault) {
    absl::StrAppend(&out, " ", types::PolicyName(s.policy));
  }
  if (!s.engine.empty()) absl::StrAppend(&out, " (", s.engine, ")");
  return out;
}

}  // namespace dflash::web
