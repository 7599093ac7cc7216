#include "compare/plot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/flame_graph.h"

namespace blklab::compare {
namespace {

constexpr int kWidth = 860;
constexpr int kLabelWidth = 300;  // left column for row labels
constexpr int kRowHeight = 24;
constexpr int kTop = 44;          // title and axis labels
constexpr int kBottom = 36;
constexpr int kRight = 90;        // room for the value printed after a bar
// Colours that read on white and in grey: one per series.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

std::string Escape(const std::string& s) { return report::XmlEscape(s); }

std::string Header(int width, int height, const std::string& title) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
      width, height, width, height, width, height, Escape(title));
}

// A "nice" axis maximum: 1, 2, 2.5 or 5 times a power of ten, at least `v`.
double NiceMax(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

// One legend entry: a short line in the series' colour and its label.
std::string LegendLine(int x, int y, const char* colour, const std::string& label) {
  return absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"%s\"/>"
                         "<text x=\"%d\" y=\"%d\">%s</text>\n",
                         x, y, colour, x + 18, y + 6, Escape(label));
}

std::string FormatValue(double v, const std::string& unit) {
  if (unit == "IOPS") {
    if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
    if (v >= 1e3) return absl::StrFormat("%.0fK", v / 1e3);
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%.1f%s", v, unit);
}

// Vertical grid lines and their labels for a horizontal bar chart whose
// bars start at x0 and reach x0 + span at `max`.
std::string Grid(int x0, int span, int y0, int y1, double max, const std::string& unit) {
  std::string out;
  for (int i = 0; i <= 4; ++i) {
    const double v = max * i / 4;
    const int x = x0 + span * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, y0,
                                          x, y1));
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
                                          x, y1 + 16, Escape(FormatValue(v, unit))));
  }
  return out;
}

// A row's label in the left column, and "stalled" where its bar would be.
std::string RowLabel(const PlotRow& r, int y) {
  std::string out = absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", kLabelWidth - 8,
                                    y + 16, Escape(r.label));
  if (r.stalled) {
    absl::StrAppend(&out, absl::StrFormat("<text class=\"stalled\" x=\"%d\" y=\"%d\" fill=\"#d62728\">stalled</text>\n",
                                          kLabelWidth + 4, y + 16));
  }
  return out;
}

// One bar per row: value(row), with an optional whisker [lo, hi].
template <typename ValueFn, typename RangeFn>
std::string BarChart(const PlotInput& in, const std::string& title, const std::string& unit, double fixed_max,
                     ValueFn value, RangeFn range) {
  const int n = static_cast<int>(in.rows.size());
  const int height = kTop + n * kRowHeight + kBottom;
  const int span = kWidth - kLabelWidth - kRight;
  double max = fixed_max;
  if (max <= 0) {
    for (const PlotRow& r : in.rows) {
      if (!r.stalled) max = std::max(max, std::max(value(r), range(r).second));
    }
    max = NiceMax(max);
  }
  std::string out = Header(kWidth, height, title);
  out += Grid(kLabelWidth, span, kTop - 4, kTop + n * kRowHeight, max, unit);
  for (int i = 0; i < n; ++i) {
    const PlotRow& r = in.rows[static_cast<size_t>(i)];
    const int y = kTop + i * kRowHeight;
    out += RowLabel(r, y);
    if (r.stalled) continue;
    const double v = value(r);
    const int w = static_cast<int>(std::lround(span * std::clamp(v / max, 0.0, 1.0)));
    absl::StrAppend(&out, absl::StrFormat("<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                                          "fill=\"%s\"><title>%s: %s</title></rect>\n",
                                          kLabelWidth, y + 4, w, kRowHeight - 8, kPalette[0], Escape(r.label),
                                          Escape(FormatValue(v, unit))));
    const auto [lo, hi] = range(r);
    if (hi > lo) {
      const int x_lo = kLabelWidth + static_cast<int>(std::lround(span * std::clamp(lo / max, 0.0, 1.0)));
      const int x_hi = kLabelWidth + static_cast<int>(std::lround(span * std::clamp(hi / max, 0.0, 1.0)));
      const int ym = y + kRowHeight / 2;
      absl::StrAppend(&out, absl::StrFormat("<path class=\"whisker\" d=\"M%d %dH%dM%d %dV%dM%d %dV%d\" "
                                            "stroke=\"black\" fill=\"none\"/>\n",
                                            x_lo, ym, x_hi, x_lo, ym - 5, ym + 5, x_hi, ym - 5, ym + 5));
    }
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\">%s</text>\n", kLabelWidth + w + 6, y + 16,
                                          Escape(FormatValue(v, unit))));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

std::string IopsSvg(const PlotInput& in) {
  bool samples = false;
  for (const PlotRow& r : in.rows) samples = samples || r.iops_max > r.iops_min;
  return BarChart(
      in, samples ? "IOPS per cell (whisker: min-max over the samples)" : "IOPS per cell", "IOPS", 0,
      [](const PlotRow& r) { return r.iops; },
      [](const PlotRow& r) { return std::make_pair(r.iops_min, r.iops_max); });
}

std::string ContentionSvg(const PlotInput& in) {
  double max = 0;
  for (const PlotRow& r : in.rows) max = std::max(max, r.contention_pct);
  return BarChart(
      in, "Spinlock contention (native_queued_spin_lock_slowpath, % of busy CPU time)", "%",
      max <= 0 ? 1.0 : std::min(100.0, NiceMax(max)), [](const PlotRow& r) { return r.contention_pct; },
      [](const PlotRow&) { return std::make_pair(0.0, 0.0); });
}

std::string CpuSvg(const PlotInput& in) {
  const int n = static_cast<int>(in.rows.size());
  const int height = kTop + n * kRowHeight + kBottom + 18;
  const int span = kWidth - kLabelWidth - kRight;
  std::string out = Header(kWidth, height, "fio's CPU time per job (usr and sys, % of the job's runtime)");
  out += Grid(kLabelWidth, span, kTop - 4, kTop + n * kRowHeight, 100.0, "%");
  for (int i = 0; i < n; ++i) {
    const PlotRow& r = in.rows[static_cast<size_t>(i)];
    const int y = kTop + i * kRowHeight;
    out += RowLabel(r, y);
    if (r.stalled) continue;
    const int w_usr = static_cast<int>(std::lround(span * std::clamp(r.usr_pct / 100.0, 0.0, 1.0)));
    const int w_sys = static_cast<int>(std::lround(span * std::clamp(r.sys_pct / 100.0, 0.0, 1.0 - r.usr_pct / 100.0)));
    absl::StrAppend(&out, absl::StrFormat("<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                                          "<title>usr %.1f%%</title></rect>\n",
                                          kLabelWidth, y + 4, w_usr, kRowHeight - 8, kPalette[0], r.usr_pct));
    absl::StrAppend(&out, absl::StrFormat("<rect class=\"bar-sys\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                                          "fill=\"%s\"><title>sys %.1f%%</title></rect>\n",
                                          kLabelWidth + w_usr, y + 4, w_sys, kRowHeight - 8, kPalette[1], r.sys_pct));
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\">usr %.1f%% sys %.1f%%</text>\n",
                                          kLabelWidth + w_usr + w_sys + 6, y + 16, r.usr_pct, r.sys_pct));
  }
  const int ly = kTop + n * kRowHeight + kBottom;
  absl::StrAppend(&out, absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                                        "<text x=\"%d\" y=\"%d\">usr</text>\n"
                                        "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                                        "<text x=\"%d\" y=\"%d\">sys</text>\n",
                                        kLabelWidth, ly, kPalette[0], kLabelWidth + 16, ly + 11, kLabelWidth + 60, ly,
                                        kPalette[1], kLabelWidth + 76, ly + 11));
  out += "</svg>\n";
  return out;
}

std::string LatencySvg(const PlotInput& in) {
  // x: the percentile on a "nines" axis, -log10(1 - p/100): p50 = 0.3,
  // p90 = 1, p99 = 2, p99.9 = 3, p99.99 = 4. y: latency in microseconds.
  const int n = static_cast<int>(in.rows.size());
  const int legend = n * 16 + 8;
  const int plot_w = kWidth - 100 - 40, plot_h = 300;
  const int x0 = 90, y0 = kTop + plot_h;  // the origin
  const int height = kTop + plot_h + 40 + legend;
  double max_us = 0;
  for (const PlotRow& r : in.rows) {
    for (const auto& [p, ns] : r.clat_percentiles) max_us = std::max(max_us, static_cast<double>(ns) / 1000.0);
  }
  max_us = NiceMax(max_us);
  constexpr double kMaxNines = 4.0;
  auto x_of = [&](double p) {
    const double nines = -std::log10(std::max(1e-6, 1.0 - p / 100.0));
    return x0 + static_cast<int>(std::lround(plot_w * std::clamp(nines / kMaxNines, 0.0, 1.0)));
  };
  auto y_of = [&](double us) { return y0 - static_cast<int>(std::lround(plot_h * std::clamp(us / max_us, 0.0, 1.0))); };
  std::string out = Header(kWidth, height, "Completion latency (clat) percentiles per cell, microseconds");
  for (int i = 0; i <= 4; ++i) {
    const int y = y0 - plot_h * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%s</text>\n",
                                          x0, y, x0 + plot_w, y, x0 - 6, y + 4,
                                          absl::StrFormat("%.4g", max_us * i / 4)));
  }
  for (double p : {50.0, 90.0, 99.0, 99.9, 99.99}) {
    const int x = x_of(p);
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">p%g</text>\n",
                                          x, kTop, x, y0, x, y0 + 16, p));
  }
  for (int i = 0; i < n; ++i) {
    const PlotRow& r = in.rows[static_cast<size_t>(i)];
    const char* colour = kPalette[i % kPaletteSize];
    if (!r.stalled && !r.clat_percentiles.empty()) {
      std::string points;
      for (const auto& [p, ns] : r.clat_percentiles) {
        absl::StrAppend(&points, points.empty() ? "" : " ", x_of(p), ",", y_of(static_cast<double>(ns) / 1000.0));
      }
      absl::StrAppend(&out, absl::StrFormat("<polyline class=\"curve\" points=\"%s\" fill=\"none\" stroke=\"%s\" "
                                            "stroke-width=\"2\"><title>%s</title></polyline>\n",
                                            points, colour, Escape(r.label)));
    }
    out += LegendLine(x0, y0 + 36 + i * 16, colour,
                      r.label + (r.stalled ? " (stalled)" : r.clat_percentiles.empty() ? " (no samples)" : ""));
  }
  out += "</svg>\n";
  return out;
}

std::string LatencyHistogramSvg(const PlotInput& in) {
  // x: latency on a log scale (the bins' edges, four per power of two);
  // y: the share of the row's IOs in each bin, as a step outline per row.
  const int n = static_cast<int>(in.rows.size());
  const int legend = n * 16 + 8;
  const int plot_w = kWidth - 100 - 40, plot_h = 300;
  const int x0 = 90, y0 = kTop + plot_h;
  const int height = kTop + plot_h + 40 + legend;
  uint64_t lo = 0, hi = 0;
  double max_pct = 0;
  for (const PlotRow& r : in.rows) {
    if (r.stalled || r.clat_histogram.empty()) continue;
    uint64_t total = 0;
    for (const auto& b : r.clat_histogram) total += b.count;
    for (const auto& b : r.clat_histogram) {
      max_pct = std::max(max_pct, 100.0 * static_cast<double>(b.count) / static_cast<double>(total));
    }
    lo = lo == 0 ? r.clat_histogram.front().lower_ns : std::min(lo, r.clat_histogram.front().lower_ns);
    hi = std::max(hi, r.clat_histogram.back().upper_ns);
  }
  std::string out = Header(kWidth, height, "Completion latency (clat) distribution per cell, % of IOs per bin");
  if (lo == 0) {
    out += "</svg>\n";
    return out;
  }
  // The axis spans whole decades around the data.
  double lg_lo = std::floor(std::log10(static_cast<double>(lo)));
  double lg_hi = std::ceil(std::log10(static_cast<double>(hi)));
  if (lg_hi <= lg_lo) lg_hi = lg_lo + 1;
  max_pct = NiceMax(max_pct);
  auto x_of = [&](uint64_t ns) {
    const double f = (std::log10(static_cast<double>(ns)) - lg_lo) / (lg_hi - lg_lo);
    return x0 + static_cast<int>(std::lround(plot_w * std::clamp(f, 0.0, 1.0)));
  };
  auto y_of = [&](double pct) { return y0 - static_cast<int>(std::lround(plot_h * std::clamp(pct / max_pct, 0.0, 1.0))); };
  for (int i = 0; i <= 4; ++i) {
    const int y = y0 - plot_h * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%s%%</text>\n",
                                          x0, y, x0 + plot_w, y, x0 - 6, y + 4, absl::StrFormat("%.3g", max_pct * i / 4)));
  }
  static constexpr const char* kDecades[] = {"1 ns", "10 ns", "100 ns", "1 us", "10 us", "100 us",
                                             "1 ms", "10 ms", "100 ms", "1 s",   "10 s",  "100 s"};
  for (int d = static_cast<int>(lg_lo); d <= static_cast<int>(lg_hi) && d < 12; ++d) {
    const int x = x_of(static_cast<uint64_t>(std::llround(std::pow(10.0, d))));
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
                                          x, kTop, x, y0, x, y0 + 16, kDecades[d]));
  }
  for (int i = 0; i < n; ++i) {
    const PlotRow& r = in.rows[static_cast<size_t>(i)];
    const char* colour = kPalette[i % kPaletteSize];
    if (!r.stalled && !r.clat_histogram.empty()) {
      uint64_t total = 0;
      for (const auto& b : r.clat_histogram) total += b.count;
      std::string points = absl::StrCat(x_of(r.clat_histogram.front().lower_ns), ",", y0);
      for (size_t k = 0; k < r.clat_histogram.size(); ++k) {
        const auto& b = r.clat_histogram[k];
        const int y = y_of(100.0 * static_cast<double>(b.count) / static_cast<double>(total));
        absl::StrAppend(&points, " ", x_of(b.lower_ns), ",", y, " ", x_of(b.upper_ns), ",", y);
        // Empty bins between two bins: back to zero.
        if (k + 1 == r.clat_histogram.size() || r.clat_histogram[k + 1].lower_ns > b.upper_ns) {
          absl::StrAppend(&points, " ", x_of(b.upper_ns), ",", y0);
          if (k + 1 < r.clat_histogram.size()) {
            absl::StrAppend(&points, " ", x_of(r.clat_histogram[k + 1].lower_ns), ",", y0);
          }
        }
      }
      absl::StrAppend(&out, absl::StrFormat("<polyline class=\"hist\" points=\"%s\" fill=\"none\" stroke=\"%s\" "
                                            "stroke-width=\"2\"><title>%s (%d IOs)</title></polyline>\n",
                                            points, colour, Escape(r.label), total));
    }
    out += LegendLine(x0, y0 + 36 + i * 16, colour,
                      r.label + (r.stalled ? " (stalled)" : r.clat_histogram.empty() ? " (no samples)" : ""));
  }
  out += "</svg>\n";
  return out;
}

namespace {

// A matrix value as a number: a plain decimal, or with fio's k / m / g
// suffix (1024-based, as fio's sizes). nullopt otherwise.
std::optional<double> AxisNumber(const std::string& v) {
  if (v.empty()) return std::nullopt;
  double mult = 1;
  std::string digits = v;
  const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(v.back())));
  if (last == 'k' || last == 'm' || last == 'g') {
    mult = last == 'k' ? 1024.0 : last == 'm' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
    digits.pop_back();
  }
  double d = 0;
  if (digits.empty() || !absl::SimpleAtod(digits, &d) || !std::isfinite(d) || d < 0) return std::nullopt;
  return d * mult;
}

// The p99 clat of a row, in microseconds, or nullopt.
std::optional<double> P99Us(const PlotRow& r) {
  for (const auto& [p, ns] : r.clat_percentiles) {
    if (p == 99.0) return static_cast<double>(ns) / 1000.0;
  }
  return std::nullopt;
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), in the matrix's order
};

// `over_time`: a linear x axis and no dot per point (many points).
std::string LineChart(const std::string& title, const std::string& x_name, const std::string& y_unit,
                      const std::vector<Series>& series, const std::vector<double>& xs, bool over_time = false) {
  const int plot_w = kWidth - 100 - 40, plot_h = 300;
  const int x0 = 90, y0 = kTop + plot_h;
  const int legend = static_cast<int>(series.size()) * 16 + 8;
  const int height = kTop + plot_h + 40 + legend;
  double x_min = *std::min_element(xs.begin(), xs.end());
  double x_max = *std::max_element(xs.begin(), xs.end());
  const bool log_x = !over_time && x_min > 0 && x_max / x_min >= 8;
  auto xv = [&](double x) { return log_x ? std::log2(x) : x; };
  double lo = xv(x_min), hi = xv(x_max);
  if (hi <= lo) hi = lo + 1;
  double y_max = 0;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) y_max = std::max(y_max, y);
  }
  y_max = NiceMax(y_max);
  auto px = [&](double x) { return x0 + static_cast<int>(std::lround(plot_w * (xv(x) - lo) / (hi - lo))); };
  auto py = [&](double y) { return y0 - static_cast<int>(std::lround(plot_h * std::clamp(y / y_max, 0.0, 1.0))); };
  std::string out = Header(kWidth, height, title);
  for (int i = 0; i <= 4; ++i) {
    const int y = y0 - plot_h * i / 4;
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%s</text>\n",
                                          x0, y, x0 + plot_w, y, x0 - 6, y + 4,
                                          Escape(FormatValue(y_max * i / 4, y_unit))));
  }
  for (double x : xs) {
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n",
                                          px(x), kTop, px(x), y0, px(x), y0 + 16, x));
  }
  absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s%s</text>\n",
                                        x0 + plot_w / 2, y0 + 30, Escape(x_name), log_x ? " (log scale)" : ""));
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const char* colour = kPalette[i % kPaletteSize];
    std::string points;
    for (const auto& [x, y] : s.points) absl::StrAppend(&points, points.empty() ? "" : " ", px(x), ",", py(y));
    absl::StrAppend(&out, absl::StrFormat("<polyline class=\"series\" points=\"%s\" fill=\"none\" stroke=\"%s\" "
                                          "stroke-width=\"2\"><title>%s</title></polyline>\n",
                                          points, colour, Escape(s.name)));
    for (const auto& [x, y] : s.points) {
      if (over_time) break;
      absl::StrAppend(&out, absl::StrFormat("<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"%s\"/>\n", px(x), py(y), colour));
    }
    out += LegendLine(x0, y0 + 44 + static_cast<int>(i) * 16, colour, s.name);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

namespace {

// The indices of the matrix axes whose every value is a number.
std::vector<size_t> NumericAxes(const PlotInput& in) {
  std::vector<size_t> out;
  if (in.rows.empty()) return out;
  for (size_t a = 0; a < in.rows[0].axes.size(); ++a) {
    bool numeric = true;
    for (const PlotRow& r : in.rows) numeric = numeric && a < r.axes.size() && AxisNumber(r.axes[a].second);
    if (numeric) out.push_back(a);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SweepSvgs(const PlotInput& in) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<size_t> numeric = NumericAxes(in);
  if (numeric.empty()) return out;
  const size_t axis = numeric.front();  // the first numeric axis
  const std::string name = in.rows[0].axes[axis].first;
  // One series per variant and values of the other axes, in first-seen order.
  std::vector<Series> iops, p99;
  std::vector<double> xs;
  for (const PlotRow& r : in.rows) {
    std::string key = r.variant;
    for (size_t a = 0; a < r.axes.size(); ++a) {
      if (a != axis) absl::StrAppend(&key, ", ", r.axes[a].first, "=", r.axes[a].second);
    }
    const double x = *AxisNumber(r.axes[axis].second);
    if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
    auto find = [&key](std::vector<Series>& v) -> Series& {
      for (Series& s : v) {
        if (s.name == key) return s;
      }
      v.push_back(Series{key, {}});
      return v.back();
    };
    Series& si = find(iops);
    Series& sp = find(p99);
    if (r.stalled) continue;
    si.points.emplace_back(x, r.iops);
    if (const std::optional<double> us = P99Us(r)) sp.points.emplace_back(x, *us);
  }
  std::string file = name;
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  out.emplace_back("iops-vs-" + file + ".svg", LineChart("IOPS against " + name, name, "IOPS", iops, xs));
  bool any_p99 = false;
  for (const Series& s : p99) any_p99 = any_p99 || !s.points.empty();
  if (any_p99) out.emplace_back("p99-vs-" + file + ".svg", LineChart("p99 completion latency (us) against " + name, name, "", p99, xs));
  return out;
}


std::vector<std::pair<std::string, std::string>> LogSvgs(const PlotInput& in) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* kind : {"bw", "iops", "lat", "slat", "clat"}) {
    const bool latency = std::string(kind) != "bw" && std::string(kind) != "iops";
    std::vector<Series> series;
    double t_max = 0;
    for (const PlotRow& r : in.rows) {
      for (const CellResult::LogSeries& ls : r.log_series) {
        if (ls.kind != kind || ls.points.empty()) continue;
        Series s{r.label, {}};
        for (const auto& [t, v] : ls.points) {
          s.points.emplace_back(static_cast<double>(t) / 1000.0, latency ? v / 1000.0 : v);
          t_max = std::max(t_max, static_cast<double>(t) / 1000.0);
        }
        series.push_back(std::move(s));
      }
    }
    if (series.empty()) continue;
    std::vector<double> xs;
    for (int i = 0; i <= 4; ++i) xs.push_back(t_max * i / 4);
    const std::string what = std::string(kind) == "bw"     ? "bandwidth (KiB/s)"
                             : std::string(kind) == "iops" ? "IOPS"
                                                           : std::string(kind) + " latency (us)";
    out.emplace_back(absl::StrCat("log-", kind, ".svg"),
                     LineChart(absl::StrCat("fio's ", kind, " log: ", what, " per log_avg_msec window, per cell"),
                               "seconds of the job's time", latency ? "" : (std::string(kind) == "iops" ? "IOPS" : ""),
                               series, xs, /*over_time=*/true));
  }
  return out;
}

std::string GridSvg(const PlotInput& in) {
  const std::vector<size_t> numeric = NumericAxes(in);
  if (in.rows.empty() || in.rows[0].axes.size() != 2 || numeric.size() != 2) return "";
  // Columns: the first axis' values; rows: the second's; one panel per
  // variant, in the matrix's order.
  std::vector<std::string> xs, ys, variants;
  auto add = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  double max = 0;
  for (const PlotRow& r : in.rows) {
    add(xs, r.axes[0].second);
    add(ys, r.axes[1].second);
    add(variants, r.variant);
    if (!r.stalled) max = std::max(max, r.iops);
  }
  const int cell_w = std::max(60, std::min(110, (kWidth - 160) / static_cast<int>(xs.size())));
  const int cell_h = 28;
  const int panel_h = 40 + static_cast<int>(ys.size()) * cell_h + 24;
  const int height = kTop + static_cast<int>(variants.size()) * panel_h + 10;
  const std::string& xname = in.rows[0].axes[0].first;
  const std::string& yname = in.rows[0].axes[1].first;
  std::string out = Header(kWidth, height, "IOPS per " + xname + " x " + yname + " (darker: more IOPS)");
  for (size_t v = 0; v < variants.size(); ++v) {
    const int top = kTop + static_cast<int>(v) * panel_h;
    const int x0 = 120;
    absl::StrAppend(&out, absl::StrFormat("<text x=\"10\" y=\"%d\" font-weight=\"bold\">%s</text>\n", top + 14,
                                          Escape(variants[v])));
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\" fill=\"#555\">%s</text>\n", x0, top + 32,
                                          Escape(xname + " \u2192")));
    for (size_t i = 0; i < xs.size(); ++i) {
      absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
                                            x0 + static_cast<int>(i) * cell_w + cell_w / 2, top + panel_h - 8,
                                            Escape(xs[i])));
    }
    for (size_t j = 0; j < ys.size(); ++j) {
      const int y = top + 40 + static_cast<int>(j) * cell_h;
      absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%s=%s</text>\n",
                                            x0 - 8, y + 18, Escape(yname), Escape(ys[j])));
      for (size_t i = 0; i < xs.size(); ++i) {
        const PlotRow* cell = nullptr;
        for (const PlotRow& r : in.rows) {
          if (r.variant == variants[v] && r.axes[0].second == xs[i] && r.axes[1].second == ys[j]) cell = &r;
        }
        const int x = x0 + static_cast<int>(i) * cell_w;
        if (cell == nullptr || cell->stalled) {
          absl::StrAppend(&out, absl::StrFormat("<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                                                "fill=\"#eee\" stroke=\"white\"/><text x=\"%d\" y=\"%d\" "
                                                "text-anchor=\"middle\" fill=\"#d62728\">%s</text>\n",
                                                x, y, cell_w, cell_h, x + cell_w / 2, y + 18,
                                                cell == nullptr ? "-" : "stalled"));
          continue;
        }
        const double f = max > 0 ? std::clamp(cell->iops / max, 0.0, 1.0) : 0;
        // White to the palette's blue (31, 119, 180).
        const int red = static_cast<int>(std::lround(255 - f * (255 - 31)));
        const int green = static_cast<int>(std::lround(255 - f * (255 - 119)));
        const int blue = static_cast<int>(std::lround(255 - f * (255 - 180)));
        absl::StrAppend(&out, absl::StrFormat("<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                                              "fill=\"#%02x%02x%02x\" stroke=\"white\"><title>%s</title></rect>"
                                              "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                                              x, y, cell_w, cell_h, red, green, blue, Escape(cell->label),
                                              x + cell_w / 2, y + 18, f > 0.6 ? "white" : "black",
                                              Escape(FormatValue(cell->iops, "IOPS"))));
      }
    }
  }
  out += "</svg>\n";
  return out;
}

std::string ReportHtml(const PlotInput& in) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + Escape(in.title) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:900px}"
      "pre{background:#f6f6f6;padding:12px;overflow-x:auto}svg{display:block;margin:16px 0}</style>\n"
      "</head>\n<body>\n<h1>" +
      Escape(in.title) + "</h1>\n<pre>" + Escape(in.table_text) + "</pre>\n";
  for (const std::string& svg : {IopsSvg(in), ContentionSvg(in), CpuSvg(in), LatencySvg(in), LatencyHistogramSvg(in)}) {
    out += svg;
  }
  for (const auto& [name, svg] : SweepSvgs(in)) out += svg;
  out += GridSvg(in);
  for (const auto& [name, svg] : LogSvgs(in)) out += svg;
  bool any = false;
  for (const PlotRow& r : in.rows) {
    if (r.stacks.empty()) continue;
    if (!any) out += "<h2>Flame graphs of the simulated kernel</h2>\n<ul>\n";
    any = true;
    const std::string slug = RowSlug(r);
    out += "<li>" + Escape(r.label) + ": <a href=\"flame-" + slug + ".svg\">flame graph</a>";
    if (!r.is_baseline && r.baseline_row >= 0) {
      out += ", <a href=\"flame-diff-" + slug + ".svg\">against " + Escape(in.rows[r.baseline_row].label) + "</a>";
    }
    out += ", <a href=\"" + slug + ".folded\">folded</a></li>\n";
  }
  if (any) out += "</ul>\n";
  out += "</body>\n</html>\n";
  return out;
}

std::string RowSlug(const PlotRow& row) {
  std::string out;
  for (char ch : row.label) {
    const bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_';
    if (keep) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "row" : out;
}

PlotInput PlotInputFor(const Comparison& c, const Results& res) {
  PlotInput in;
  in.title = absl::StrCat("blklab compare: host ", c.host_label, ", ", res.cells.size(), " cells");
  in.table_text = Render(c, res, Format::kTable);
  for (const Row& row : res.rows) {
    const CellResult& first = res.results[CellIndex(c, row.point, row.variant, 0)];
    PlotRow p;
    p.label = c.variants[row.variant].name;
    p.variant = c.variants[row.variant].name;
    for (const Setting& s : PointSettings(c, row.point)) {
      p.axes.emplace_back(AxisHeader(Axis{s.path, {}}), s.value);
    }
    if (const std::string point = PointLabel(c, row.point); !point.empty()) absl::StrAppend(&p.label, ", ", point);
    p.iops = row.iops;
    if (c.samples > 1) {
      p.iops_min = row.iops_min;
      p.iops_max = row.iops_max;
    }
    p.contention_pct = row.contention_pct;
    p.usr_pct = first.usr_pct;
    p.sys_pct = first.sys_pct;
    p.clat_percentiles = first.clat_percentiles;
    p.clat_histogram = first.clat_histogram;
    p.log_series = first.log_series;
    p.stalled = row.stalled;
    p.stacks = first.stacks;
    p.is_baseline = row.variant == 0;
    for (size_t k = 0; k < res.rows.size(); ++k) {
      if (res.rows[k].point == row.point && res.rows[k].variant == 0) p.baseline_row = static_cast<int>(k);
    }
    in.rows.push_back(std::move(p));
  }
  return in;
}

std::vector<std::pair<std::string, std::string>> PlotFiles(const PlotInput& in) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"iops.svg", IopsSvg(in)},       {"contention.svg", ContentionSvg(in)}, {"cpu.svg", CpuSvg(in)},
      {"latency.svg", LatencySvg(in)}, {"latency-histogram.svg", LatencyHistogramSvg(in)},
      {"report.html", ReportHtml(in)},
  };
  for (auto& f : SweepSvgs(in)) files.push_back(std::move(f));
  if (std::string grid = GridSvg(in); !grid.empty()) files.emplace_back("grid.svg", std::move(grid));
  for (auto& f : LogSvgs(in)) files.push_back(std::move(f));
  for (const PlotRow& r : in.rows) {
    if (r.stacks.empty()) continue;
    const std::string slug = RowSlug(r);
    files.emplace_back("flame-" + slug + ".svg",
                       report::FlameGraphSvg(r.stacks, r.label + ": simulated CPU time by call stack"));
    files.emplace_back(slug + ".folded", report::FoldedStacks(r.stacks));
    if (!r.is_baseline && r.baseline_row >= 0 && !in.rows[r.baseline_row].stacks.empty()) {
      files.emplace_back("flame-diff-" + slug + ".svg",
                         report::DiffFlameGraphSvg(in.rows[r.baseline_row].stacks, r.stacks,
                                                   r.label + " against " + in.rows[r.baseline_row].label));
    }
  }
  return files;
}

}  // namespace blklab::compare
