// File: svg_plot.h
// Inline SVG charts for the web view: lines with 95% interval bands (one
// <path class="series"> per series, so a page's DOM says how many lines it
// drew) and bar charts. Self-contained: no script, no external resource.
#pragma once

#include <string>
#include <vector>

namespace dflash::web {

struct PlotPoint {
  double x = 0, y = 0;
  bool has_band = false;
  double lo = 0, hi = 0;
  bool marked = false;  // drawn as a red ring (e.g. a gate verdict "worse")
  std::string label;    // tooltip
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;  // in x order
};

// A line chart; "" when no series has a point.
std::string LinePlot(const std::string& title, const std::string& x_label,
                     const std::vector<PlotSeries>& series);

// One bar per value (labels under them), values in [0, max(values)].
std::string BarPlot(const std::string& title, const std::vector<std::string>& labels,
                    const std::vector<double>& values);

}  // namespace dflash::web
