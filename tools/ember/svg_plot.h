// Small SVG charts written by ember itself (no dependencies, no network, no
// browser needed to make them): line charts with points and a histogram,
// laid out as panels of one document. Every plotted value is also in the
// markup as data-x / data-y (points) or data-lo / data-hi / data-count
// (bars), printed as the JSON report prints it, so a test or a reader can
// check the picture against the numbers.
#pragma once

#include <string>
#include <vector>

namespace ember::cli {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
};

struct LineChart {
  std::string id;  // the panel's id attribute
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  bool log2_x = false;  // x on a log2 scale (lengths, parallelism)
};

struct Histogram {
  std::string id;
  std::string title, x_label, y_label;
  std::vector<double> values;  // x range min..2 x p95; values past it go in the last bar
  int bins = 20;
};

// Panels are placed one under the other; each is width x panel_height.
class SvgDocument {
 public:
  SvgDocument(int width, int panel_height) : width_(width), panel_height_(panel_height) {}
  void add(const LineChart& chart);
  void add(const Histogram& histogram);
  // The whole document, "<?xml ...?><svg ...>...</svg>\n".
  std::string text(const std::string& title) const;

 private:
  int width_, panel_height_;
  std::vector<std::string> panels_;
};

// Numbers as the markup and the JSON report print them.
std::string plot_number(double v, int decimals = 3);

}  // namespace ember::cli
