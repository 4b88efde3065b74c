#include "client/svg_chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dflash::client {
namespace {

// Tableau 10: distinct, readable on white, kind to common colour blindness.
constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

double TickStep(double lo, double hi, int target) {
  const double range = hi - lo;
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double rough = range / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(rough)));
  const double norm = rough / mag;
  const double nice = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  return nice * mag;
}

// Enough decimals to tell neighbouring ticks apart.
int Decimals(double step) {
  return std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6);
}

// k * step as the nearest decimal (0.6, not 0.6000000000000001), never -0.
double Snap(double v, double step) {
  const int e = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  double out;
  if (e < 0) {
    const double scale = std::pow(10.0, -e);  // an exact integer
    out = std::round(v * scale) / scale;
  } else {
    const double unit = std::pow(10.0, e);
    out = std::round(v / unit) * unit;
  }
  return out == 0 ? 0 : out;
}

std::string Num(double v) {
  return absl::StrFormat("%.1f", v);
}

struct Range {
  double lo, hi;
};

// The data's extent, widened so that it is never empty.
Range Fit(double lo, double hi, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi > lo) return {lo, hi};
  const double pad = integer ? 1 : (lo == 0 ? 0.5 : std::abs(lo) * 0.1);
  return {lo - pad, hi + pad};
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!(hi > lo)) return {lo};
  const double step = TickStep(lo, hi, target);
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(Snap(t, step));
    if (ticks.size() > 100) break;
  }
  return ticks;
}

namespace {

// Where the plot area sits in the picture and the data ranges it shows.
struct PlotFrame {
  Range xr, yr;
  double xstep = 0, ystep = 0;
  int left = 0, top = 0;
  int width = 0, height = 0;  // the whole picture
  double pw = 0, ph = 0;      // the plot area
  double X(double x) const { return left + (x - xr.lo) / (xr.hi - xr.lo) * pw; }
  double Y(double y) const { return top + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph; }
};

// Ranges from the finite data (y ends fixed by the chart where it says),
// tick steps and the plot area, legend to the right.
PlotFrame Frame(const LineChart& chart) {
  // Extent of the finite data.
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  size_t longest_name = 0;
  for (const ChartSeries& s : chart.series) {
    longest_name = std::max(longest_name, s.name.size());
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  }
  PlotFrame f;
  Range& xr = f.xr;
  Range& yr = f.yr;
  xr = Fit(xlo, xhi, chart.integer_x);
  yr = Fit(ylo, yhi, /*integer=*/false);
  if (chart.y_min) yr.lo = *chart.y_min;
  if (chart.y_max) yr.hi = *chart.y_max;
  if (!(yr.hi > yr.lo)) yr = Fit(yr.lo, yr.lo, /*integer=*/false);
  // Unfixed y ends snap outwards to whole ticks, with a little headroom.
  f.ystep = TickStep(yr.lo, yr.hi, 6);
  if (!chart.y_min) yr.lo = std::floor(yr.lo / f.ystep) * f.ystep;
  if (!chart.y_max) yr.hi = std::ceil(yr.hi / f.ystep) * f.ystep;
  f.xstep = TickStep(xr.lo, xr.hi, 8);
  if (chart.integer_x) f.xstep = xr.hi - xr.lo <= 16 ? 1.0 : std::max(1.0, std::round(f.xstep));
  // A little room so that end points do not sit on the axes.
  const double xpad = (xr.hi - xr.lo) * 0.03;
  xr.lo -= xpad;
  xr.hi += xpad;

  const int legend_w = std::clamp(static_cast<int>(longest_name) * 7 + 48, 120, 360);
  const int left = 72, right = legend_w + 24, top = 48, bottom = 62;
  f.left = left;
  f.top = top;
  f.width = chart.width + legend_w;
  f.height = chart.height;
  f.pw = std::max(f.width - left - right, 100);
  f.ph = std::max(f.height - top - bottom, 100);
  return f;
}

// Horizontal grid lines with the y tick labels.
void AppendYTicks(const PlotFrame& f, std::string& svg) {
  absl::StrAppend(&svg, "<g class=\"y-axis\" stroke=\"#dddddd\">\n");
  const int ydec = Decimals(f.ystep);
  for (double t : NiceTicks(f.yr.lo, f.yr.hi, 6)) {
    const std::string y = Num(f.Y(t));
    absl::StrAppend(&svg, "<line x1=\"", Num(f.left), "\" y1=\"", y, "\" x2=\"", Num(f.left + f.pw),
                    "\" y2=\"", y, "\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", Num(f.left - 8), "\" y=\"", y,
                    "\" dy=\"4\" "
                    "text-anchor=\"end\" stroke=\"none\" fill=\"#333333\">",
                    absl::StrFormat("%.*f", ydec, t), "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
}

// X tick marks and labels (whole numbers when the chart says integer_x).
void AppendXTicks(const LineChart& chart, const PlotFrame& f, std::string& svg) {
  const double xstep = f.xstep;
  const double top = f.top, ph = f.ph;
  absl::StrAppend(&svg, "<g class=\"x-axis\" stroke=\"#333333\">\n");
  const int xdec = chart.integer_x ? 0 : Decimals(xstep);
  for (double t = std::ceil(f.xr.lo / xstep - 1e-9) * xstep; t <= f.xr.hi + xstep * 1e-9;
       t += xstep) {
    const std::string x = Num(f.X(t));
    absl::StrAppend(&svg, "<line x1=\"", x, "\" y1=\"", Num(top + ph), "\" x2=\"", x, "\" y2=\"",
                    Num(top + ph + 5), "\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", x, "\" y=\"", Num(top + ph + 19),
                    "\" text-anchor=\"middle\" "
                    "stroke=\"none\" fill=\"#333333\">",
                    absl::StrFormat("%.*f", xdec, std::abs(t) < xstep * 1e-9 ? 0.0 : t),
                    "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
}

// The two axis lines and the axis titles.
void AppendAxes(const LineChart& chart, const PlotFrame& f, std::string& svg) {
  const int left = f.left, top = f.top;
  const double pw = f.pw, ph = f.ph;
  absl::StrAppend(&svg, "<path class=\"axes\" d=\"M", Num(left), " ", Num(top), " V", Num(top + ph),
                  " H", Num(left + pw),
                  "\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1\"/>\n");
  absl::StrAppend(&svg, "<text x=\"", Num(left + pw / 2), "\" y=\"", Num(f.height - 16),
                  "\" text-anchor=\"middle\" font-size=\"13\">", XmlEscape(chart.x_label),
                  "</text>\n");
  absl::StrAppend(&svg, "<text x=\"18\" y=\"", Num(top + ph / 2),
                  "\" text-anchor=\"middle\" "
                  "font-size=\"13\" transform=\"rotate(-90 18 ",
                  Num(top + ph / 2), ")\">", XmlEscape(chart.y_label), "</text>\n");
}

const char* SeriesColor(size_t i) {
  return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

// Series: one polyline each, markers on the finite points.
void AppendSeries(const LineChart& chart, const PlotFrame& f, std::string& svg) {
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* color = SeriesColor(i);
    std::string points, markers;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (!points.empty()) points += ' ';
      absl::StrAppend(&points, Num(f.X(x)), ",", Num(f.Y(y)));
      absl::StrAppend(&markers, "<circle cx=\"", Num(f.X(x)), "\" cy=\"", Num(f.Y(y)),
                      "\" r=\"3.5\"/>\n");
    }
    absl::StrAppend(&svg, "<g class=\"series\" fill=\"", color, "\">\n<title>", XmlEscape(s.name),
                    "</title>\n<polyline points=\"", points, "\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n", markers, "</g>\n");
  }
}

// Legend, right of the plot.
void AppendLegend(const LineChart& chart, const PlotFrame& f, std::string& svg) {
  const double lx = f.left + f.pw + 20;
  absl::StrAppend(&svg, "<g class=\"legend\">\n");
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const char* color = SeriesColor(i);
    const double ly = f.top + 10 + 20.0 * i;
    absl::StrAppend(&svg, "<line x1=\"", Num(lx), "\" y1=\"", Num(ly), "\" x2=\"", Num(lx + 22),
                    "\" y2=\"", Num(ly), "\" stroke=\"", color, "\" stroke-width=\"3\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", Num(lx + 30), "\" y=\"", Num(ly), "\" dy=\"4\">",
                    XmlEscape(chart.series[i].name), "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
}

}  // namespace

std::string RenderLineChart(const LineChart& chart) {
  const PlotFrame f = Frame(chart);
  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n",
      f.width, f.height, f.width, f.height);
  absl::StrAppend(
      &svg, absl::StrFormat("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                            f.width, f.height));
  absl::StrAppend(&svg, "<text x=\"", Num(f.left + f.pw / 2),
                  "\" y=\"26\" text-anchor=\"middle\" "
                  "font-size=\"16\" font-weight=\"bold\">",
                  XmlEscape(chart.title), "</text>\n");
  AppendYTicks(f, svg);
  AppendXTicks(chart, f, svg);
  AppendAxes(chart, f, svg);
  AppendSeries(chart, f, svg);
  AppendLegend(chart, f, svg);
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace dflash::client
