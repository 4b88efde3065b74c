// File: svg_plot.cc
// Fixed 640x260 canvas; the axes' ranges come from the data (bands included).
#include "web/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "web/html.h"

namespace dflash::web {
namespace {

constexpr double kW = 640, kH = 260, kLeft = 56, kRight = 150, kTop = 24, kBottom = 36;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (std::isnan(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void Pad() {
    if (hi - lo < 1e-9) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  double Map(double v, double a, double b) const { return a + (v - lo) / (hi - lo) * (b - a); }
};

std::string Header(const std::string& title) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" role=\"img\">"
      "<title>%s</title><text x=\"%g\" y=\"16\" font-size=\"13\">%s</text>",
      kW, kH, Escape(title), kLeft, Escape(title));
}

}  // namespace

std::string LinePlot(const std::string& title, const std::string& x_label,
                     const std::vector<PlotSeries>& series) {
  Range x, y;
  for (const PlotSeries& s : series) {
    for (const PlotPoint& p : s.points) {
      x.Add(p.x);
      y.Add(p.y);
      if (p.has_band) {
        y.Add(p.lo);
        y.Add(p.hi);
      }
    }
  }
  if (!(x.lo <= x.hi)) return "";
  x.Pad();
  y.Pad();
  const auto px = [&](double v) { return x.Map(v, kLeft, kW - kRight); };
  const auto py = [&](double v) { return y.Map(v, kH - kBottom, kTop); };
  std::string out = Header(title);
  absl::StrAppend(&out, absl::StrFormat("<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
                                        "stroke=\"#999\"/><line x1=\"%g\" y1=\"%g\" x2=\"%g\" "
                                        "y2=\"%g\" stroke=\"#999\"/>",
                                        kLeft, kH - kBottom, kW - kRight, kH - kBottom, kLeft, kTop,
                                        kLeft, kH - kBottom));
  for (double v : {y.lo, (y.lo + y.hi) / 2, y.hi}) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"4\" y=\"%.1f\" font-size=\"11\">%s</text>",
                                          py(v) + 4, Num(v)));
  }
  absl::StrAppend(&out, absl::StrFormat("<text x=\"%g\" y=\"%g\" font-size=\"11\">%s %s</text>"
                                        "<text x=\"%g\" y=\"%g\" font-size=\"11\" "
                                        "text-anchor=\"end\">%s</text>",
                                        kLeft, kH - 8, Escape(x_label), Num(x.lo), kW - kRight,
                                        kH - 8, Num(x.hi)));
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    const char* color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string band_top, band_bottom, line;
    for (const PlotPoint& p : s.points) {
      absl::StrAppend(&line, line.empty() ? "M" : " L",
                      absl::StrFormat("%.1f %.1f", px(p.x), py(p.y)));
      if (p.has_band) {
        absl::StrAppend(&band_top, band_top.empty() ? "" : " ",
                        absl::StrFormat("%.1f,%.1f", px(p.x), py(p.hi)));
        band_bottom = absl::StrCat(absl::StrFormat("%.1f,%.1f", px(p.x), py(p.lo)),
                                   band_bottom.empty() ? "" : " ", band_bottom);
      }
    }
    if (!band_top.empty()) {
      absl::StrAppend(&out, "<polygon class=\"band\" fill=\"", color,
                      "\" fill-opacity=\"0.15\" stroke=\"none\" points=\"", band_top, " ",
                      band_bottom, "\"/>");
    }
    absl::StrAppend(&out, "<path class=\"series\" data-name=\"", Escape(s.name), "\" d=\"", line,
                    "\" fill=\"none\" stroke=\"", color, "\" stroke-width=\"2\"/>");
    for (const PlotPoint& p : s.points) {
      absl::StrAppend(&out,
                      absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" "
                                      "stroke=\"%s\" stroke-width=\"2\"><title>%s</title>"
                                      "</circle>",
                                      px(p.x), py(p.y), p.marked ? 6 : 3, p.marked ? "none" : color,
                                      p.marked ? "#b00" : color, Escape(p.label)));
    }
    absl::StrAppend(&out,
                    absl::StrFormat("<text x=\"%g\" y=\"%g\" font-size=\"11\" fill=\"%s\">"
                                    "%s</text>",
                                    kW - kRight + 8, kTop + 14 * (k + 1), color, Escape(s.name)));
  }
  return absl::StrCat(out, "</svg>");
}

std::string BarPlot(const std::string& title, const std::vector<std::string>& labels,
                    const std::vector<double>& values) {
  if (values.empty()) return "";
  double top = 0;
  for (double v : values) top = std::max(top, std::isnan(v) ? 0 : v);
  if (top <= 0) top = 1;
  const double slot = (kW - kLeft - kRight) / static_cast<double>(values.size());
  std::string out = Header(title);
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = std::isnan(values[i]) ? 0 : values[i];
    const double h = v / top * (kH - kTop - kBottom);
    absl::StrAppend(
        &out, absl::StrFormat("<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                              "height=\"%.1f\" fill=\"#1f77b4\"><title>%s: %s</title>"
                              "</rect><text x=\"%.1f\" y=\"%g\" font-size=\"10\" "
                              "text-anchor=\"middle\">%s</text>",
                              kLeft + i * slot + 1, kH - kBottom - h, std::max(1.0, slot - 2), h,
                              Escape(labels[i]), Num(values[i]), kLeft + (i + 0.5) * slot,
                              kH - kBottom + 14, Escape(labels[i])));
  }
  absl::StrAppend(&out, absl::StrFormat("<text x=\"4\" y=\"%g\" font-size=\"11\">%s</text>",
                                        kTop + 4, Num(top)));
  return absl::StrCat(out, "</svg>");
}

}  // namespace dflash::web
