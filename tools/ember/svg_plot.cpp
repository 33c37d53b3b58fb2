#include "tools/ember/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember::cli {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};
constexpr int kLeft = 80, kRight = 170, kTop = 40, kBottom = 50;  // margins around a plot area

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') {
      o += "&lt;";
    } else if (c == '>') {
      o += "&gt;";
    } else if (c == '&') {
      o += "&amp;";
    } else if (c == '"') {
      o += "&quot;";
    } else {
      o += c;
    }
  }
  return o;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A "nice" step (1, 2 or 5 x 10^k) giving about `ticks` intervals over span.
double nice_step(double span, int ticks) {
  if (!(span > 0)) return 1;
  const double raw = span / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

std::string tick_label(double v) {
  char buf[32];
  if (std::fabs(v) >= 1e6 || (std::fabs(v) < 1e-2 && v != 0)) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", std::round(v * 1000) / 1000);
  }
  return buf;
}

// The frame of a panel: title, axes with ticks and labels. Maps values to
// pixels through x_of / y_of.
struct Frame {
  int x0, y0, w, h;  // the plot area
  double xmin, xmax, ymin, ymax;
  bool log2_x;
  double x_of(double v) const {
    const double a = log2_x ? std::log2(v) : v, lo = log2_x ? std::log2(xmin) : xmin, hi = log2_x ? std::log2(xmax) : xmax;
    return x0 + (hi > lo ? (a - lo) / (hi - lo) : 0.5) * w;
  }
  double y_of(double v) const { return y0 + h - (ymax > ymin ? (v - ymin) / (ymax - ymin) : 0.5) * h; }
};

std::string axes(const Frame& f, const std::string& title, const std::string& xl, const std::string& yl,
                 const std::vector<double>& x_ticks) {
  std::string s;
  s += "<text class=\"title\" x=\"" + px(f.x0 + f.w / 2.0) + "\" y=\"" + px(f.y0 - 14) +
       "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  s += "<g class=\"axis x\"><line x1=\"" + px(f.x0) + "\" y1=\"" + px(f.y0 + f.h) + "\" x2=\"" + px(f.x0 + f.w) +
       "\" y2=\"" + px(f.y0 + f.h) + "\" stroke=\"#000\"/>\n";
  for (double t : x_ticks) {
    const double x = f.x_of(t);
    s += "<line x1=\"" + px(x) + "\" y1=\"" + px(f.y0 + f.h) + "\" x2=\"" + px(x) + "\" y2=\"" + px(f.y0 + f.h + 5) +
         "\" stroke=\"#000\"/><text x=\"" + px(x) + "\" y=\"" + px(f.y0 + f.h + 18) +
         "\" text-anchor=\"middle\" font-size=\"11\">" + tick_label(t) + "</text>\n";
  }
  s += "<text x=\"" + px(f.x0 + f.w / 2.0) + "\" y=\"" + px(f.y0 + f.h + 38) +
       "\" text-anchor=\"middle\" font-size=\"12\">" + escape(xl) + "</text></g>\n";
  s += "<g class=\"axis y\"><line x1=\"" + px(f.x0) + "\" y1=\"" + px(f.y0) + "\" x2=\"" + px(f.x0) + "\" y2=\"" +
       px(f.y0 + f.h) + "\" stroke=\"#000\"/>\n";
  const double step = nice_step(f.ymax - f.ymin, 5);
  for (double t = std::ceil(f.ymin / step) * step; t <= f.ymax + step * 1e-9; t += step) {
    const double y = f.y_of(t);
    s += "<line x1=\"" + px(f.x0 - 5) + "\" y1=\"" + px(y) + "\" x2=\"" + px(f.x0 + f.w) + "\" y2=\"" + px(y) +
         "\" stroke=\"#ddd\"/><text x=\"" + px(f.x0 - 8) + "\" y=\"" + px(y + 4) +
         "\" text-anchor=\"end\" font-size=\"11\">" + tick_label(t) + "</text>\n";
  }
  s += "<text x=\"" + px(f.x0 - 58) + "\" y=\"" + px(f.y0 + f.h / 2.0) + "\" text-anchor=\"middle\" font-size=\"12\" "
       "transform=\"rotate(-90 " + px(f.x0 - 58) + " " + px(f.y0 + f.h / 2.0) + ")\">" + escape(yl) + "</text></g>\n";
  return s;
}

}  // namespace

std::string plot_number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void SvgDocument::add(const LineChart& c) {
  const int top = static_cast<int>(panels_.size()) * panel_height_;
  Frame f{kLeft, top + kTop, width_ - kLeft - kRight, panel_height_ - kTop - kBottom, 0, 0, 0, 0, c.log2_x};
  std::vector<double> xs;
  double ymax = 0;
  for (const PlotSeries& s : c.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      xs.push_back(s.x[i]);
      ymax = std::max(ymax, s.y[i]);
    }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.empty()) xs.push_back(1);
  f.xmin = xs.front();
  f.xmax = xs.back();
  if (f.xmin == f.xmax) {  // one x: centre it
    f.xmin = c.log2_x ? f.xmin / 2 : f.xmin - 1;
    f.xmax = c.log2_x ? f.xmax * 2 : f.xmax + 1;
  }
  f.ymin = 0;
  f.ymax = ymax > 0 ? nice_step(ymax * 1.1, 5) * std::ceil(ymax * 1.1 / nice_step(ymax * 1.1, 5)) : 1;
  std::string s = "<g class=\"chart line\" id=\"" + escape(c.id) + "\">\n";
  s += axes(f, c.title, c.x_label, c.y_label, xs);
  for (size_t k = 0; k < c.series.size(); ++k) {
    const PlotSeries& ser = c.series[k];
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    s += "<g class=\"series\" data-name=\"" + escape(ser.name) + "\">\n<polyline fill=\"none\" stroke=\"" + color +
         "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (i) s += ' ';
      s += px(f.x_of(ser.x[i])) + "," + px(f.y_of(ser.y[i]));
    }
    s += "\"/>\n";
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      s += "<circle class=\"point\" cx=\"" + px(f.x_of(ser.x[i])) + "\" cy=\"" + px(f.y_of(ser.y[i])) +
           "\" r=\"4\" fill=\"" + color + "\" data-x=\"" + plot_number(ser.x[i], 0) + "\" data-y=\"" +
           plot_number(ser.y[i]) + "\"><title>" + escape(ser.name) + ": " + plot_number(ser.x[i], 0) + ", " +
           plot_number(ser.y[i]) + "</title></circle>\n";
    }
    // The legend, right of the plot area.
    const double ly = f.y0 + 10 + 18.0 * static_cast<double>(k);
    s += "<line x1=\"" + px(f.x0 + f.w + 15) + "\" y1=\"" + px(ly) + "\" x2=\"" + px(f.x0 + f.w + 35) + "\" y2=\"" +
         px(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/><text class=\"legend\" x=\"" +
         px(f.x0 + f.w + 40) + "\" y=\"" + px(ly + 4) + "\" font-size=\"11\">" + escape(ser.name) + "</text>\n</g>\n";
  }
  s += "</g>\n";
  panels_.push_back(s);
}

void SvgDocument::add(const Histogram& hg) {
  const int top = static_cast<int>(panels_.size()) * panel_height_;
  Frame f{kLeft, top + kTop, width_ - kLeft - kRight, panel_height_ - kTop - kBottom, 0, 1, 0, 1, false};
  const int bins = std::max(1, hg.bins);
  double lo = 0, hi = 1;
  // The x range: min .. 2 x p95 (a busy machine's rare long pauses would
  // squeeze the body into one bar); the values past it count in the last bar.
  int64_t above = 0;
  if (!hg.values.empty()) {
    std::vector<double> sorted = hg.values;
    std::sort(sorted.begin(), sorted.end());
    lo = sorted.front();
    hi = std::min(sorted.back(), 2 * sorted[static_cast<size_t>(0.95 * static_cast<double>(sorted.size() - 1))]);
    for (double v : sorted) above += v > hi;
  }
  if (!(hi > lo)) hi = lo + 1e-3;
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  const double width = (hi - lo) / bins;
  for (double v : hg.values) {
    const int b = std::min(bins - 1, static_cast<int>((v - lo) / width));
    counts[static_cast<size_t>(std::max(0, b))]++;
  }
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  f.xmin = lo;
  f.xmax = hi;
  f.ymax = most > 0 ? nice_step(most * 1.1, 5) * std::ceil(most * 1.1 / nice_step(most * 1.1, 5)) : 1;
  std::vector<double> ticks;
  const double step = nice_step(hi - lo, 6);
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  std::string s = "<g class=\"chart histogram\" id=\"" + escape(hg.id) + "\" data-total=\"" +
                  std::to_string(hg.values.size()) + "\" data-above=\"" + std::to_string(above) + "\">\n";
  const std::string title =
      above ? hg.title + " (last bar: " + std::to_string(above) + " above 2 x p95, max " +
                  plot_number(*std::max_element(hg.values.begin(), hg.values.end()), 1) + ")"
            : hg.title;
  s += axes(f, title, hg.x_label, hg.y_label, ticks);
  for (int b = 0; b < bins; ++b) {
    const double a = lo + width * b, e = lo + width * (b + 1);
    const double x = f.x_of(a), y = f.y_of(static_cast<double>(counts[b]));
    s += "<rect class=\"bar\" x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(0.5, f.x_of(e) - x - 1)) +
         "\" height=\"" + px(f.y0 + f.h - y) + "\" fill=\"#1f77b4\" data-lo=\"" + plot_number(a) + "\" data-hi=\"" +
         plot_number(e) + "\" data-count=\"" + std::to_string(counts[b]) + "\"><title>" + plot_number(a) + "–" +
         plot_number(e) + ": " + std::to_string(counts[b]) + "</title></rect>\n";
  }
  s += "</g>\n";
  panels_.push_back(s);
}

std::string SvgDocument::text(const std::string& title) const {
  const int height = std::max(1, static_cast<int>(panels_.size())) * panel_height_;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width_) + "\" height=\"" +
       std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width_) + " " + std::to_string(height) +
       "\" font-family=\"sans-serif\">\n<title>" + escape(title) + "</title>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  for (const std::string& p : panels_) s += p;
  s += "</svg>\n";
  return s;
}

}  // namespace ember::cli
