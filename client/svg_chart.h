// File: svg_chart.h
// A small, dependency-free line chart as a self-contained SVG document:
// axes with "nice" ticks and labels, a title, a legend, and one <polyline>
// (plus point markers) per series. Degenerate data (no points, one point,
// all values equal, non-finite values) still gives finite coordinates.
//
//   LineChart c{"Accuracy by position", "position", "accuracy"};
//   c.y_min = 0; c.y_max = 1;
//   c.series.push_back({"job-1", {{1, 0.9}, {2, 0.7}}});
//   std::string svg = RenderLineChart(c);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dflash::client {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  // Fixed axis ends (e.g. 0..1 for accuracies); otherwise fitted to the data.
  std::optional<double> y_min, y_max;
  bool integer_x = false;  // ticks only at whole numbers (positions, steps)
  int width = 760;
  int height = 440;
};

std::string RenderLineChart(const LineChart& chart);

// Tick values covering [lo, hi] at a 1-2-5 step, about `target` of them.
std::vector<double> NiceTicks(double lo, double hi, int target);

// &, <, >, " and ' as entities: names are user text.
std::string XmlEscape(const std::string& text);

}  // namespace dflash::client
