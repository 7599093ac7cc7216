#include "engine/report/flame_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace blklab::report {
namespace {

constexpr double kWidthPx = 1200;
constexpr double kPadPx = 10;
constexpr double kFrameHeightPx = 16;
constexpr double kTitlePx = 36;
constexpr double kCharPx = 7;  // Verdana 12 px, average advance

struct Frame {
  std::string name;
  int64_t ns = 0;       // this frame and everything above it
  int64_t base_ns = 0;  // the same in the baseline (differential graphs)
  std::map<std::string, size_t> children;  // by name: flamegraph.pl's order
};

class Tree {
 public:
  Tree() { frames_.push_back(Frame{"all"}); }

  void Add(const std::string& stack, int64_t ns, bool baseline) {
    size_t at = 0;
    Count(at, ns, baseline);
    for (absl::string_view part : absl::StrSplit(stack, ';')) {
      auto [it, inserted] = frames_[at].children.try_emplace(std::string(part), frames_.size());
      if (inserted) frames_.push_back(Frame{std::string(part)});
      at = it->second;
      Count(at, ns, baseline);
    }
  }
  const Frame& frame(size_t i) const { return frames_[i]; }
  int Depth(size_t i) const {
    int d = 0;
    for (const auto& [name, c] : frames_[i].children) d = std::max(d, Depth(c));
    return d + 1;
  }

 private:
  void Count(size_t at, int64_t ns, bool baseline) {
    if (baseline) {
      frames_[at].base_ns += ns;
    } else {
      frames_[at].ns += ns;
    }
  }
  std::vector<Frame> frames_;
};

uint32_t NameHash(absl::string_view s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// flamegraph.pl's palettes, with the random parts taken from the name so a
// function has the same colour in every graph.
std::string FrameColour(const std::string& name) {
  const uint32_t h = NameHash(name);
  const double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0, v3 = ((h >> 16) & 0xff) / 255.0;
  int r, g, b;
  if (!name.empty() && name.front() == '[') {  // [hardirq], [softirq]
    r = g = b = static_cast<int>(180 + 40 * v1);
  } else if (name.rfind("fio:", 0) == 0) {  // user space: aqua
    r = static_cast<int>(50 + 60 * v3);
    g = static_cast<int>(165 + 55 * v3);
    b = static_cast<int>(165 + 55 * v3);
  } else {  // kernel: hot
    r = static_cast<int>(205 + 50 * v3);
    g = static_cast<int>(230 * v1);
    b = static_cast<int>(55 * v2);
  }
  return absl::StrFormat("rgb(%d,%d,%d)", r, g, b);
}

std::string DiffColour(int64_t delta, int64_t max_abs) {
  if (delta == 0 || max_abs == 0) return "rgb(250,250,250)";
  const double f = std::min(1.0, std::abs(static_cast<double>(delta)) / static_cast<double>(max_abs));
  const int fade = static_cast<int>(std::lround(250 * (1 - f)));
  return delta > 0 ? absl::StrFormat("rgb(250,%d,%d)", fade, fade) : absl::StrFormat("rgb(%d,%d,250)", fade, fade);
}

std::string Ns(int64_t ns) {
  if (ns >= 1000000) return absl::StrFormat("%.2f ms", ns / 1e6);
  if (ns >= 1000) return absl::StrFormat("%.2f us", ns / 1e3);
  return absl::StrCat(ns, " ns");
}

class Renderer {
 public:
  Renderer(const Tree& tree, bool diff, double min_share, int height_frames)
      : tree_(tree), diff_(diff), min_ns_(min_share * static_cast<double>(tree.frame(0).ns)),
        height_frames_(height_frames) {}

  // The largest change of any frame but the root (whose change is the
  // difference of the totals, zero after scaling).
  int64_t MaxAbsDelta(size_t i) const {
    const Frame& f = tree_.frame(i);
    int64_t m = i == 0 ? 0 : std::abs(f.ns - f.base_ns);
    for (const auto& [name, c] : f.children) m = std::max(m, MaxAbsDelta(c));
    return m;
  }

  void Draw(size_t i, double x_ns, int depth, int64_t max_abs, std::string& out) const {
    const Frame& f = tree_.frame(i);
    const double total = static_cast<double>(tree_.frame(0).ns);
    const double scale = (kWidthPx - 2 * kPadPx) / total;
    const double x = kPadPx + x_ns * scale;
    const double w = static_cast<double>(f.ns) * scale;
    const double y = kTitlePx + (height_frames_ - depth - 1) * kFrameHeightPx;
    std::string tip = absl::StrFormat("%s (%s, %.2f%%)", f.name, Ns(f.ns), 100.0 * static_cast<double>(f.ns) / total);
    if (diff_) {
      const int64_t d = f.ns - f.base_ns;
      tip = absl::StrFormat("%s (%s, %.2f%%; baseline scaled %s: %s%s)", f.name, Ns(f.ns),
                            100.0 * static_cast<double>(f.ns) / total, Ns(f.base_ns), d >= 0 ? "+" : "-",
                            Ns(std::abs(d)));
    }
    const std::string fill = diff_ ? DiffColour(f.ns - f.base_ns, max_abs) : i == 0 ? "rgb(240,240,240)"
                                                                                      : FrameColour(f.name);
    absl::StrAppendFormat(&out,
                          "<g class=\"frame\"><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\" fill=\"%s\" rx=\"2\" ry=\"2\"/>",
                          XmlEscape(tip), x, y, std::max(w - 0.5, 0.1), kFrameHeightPx - 1, fill);
    const size_t fit = static_cast<size_t>(std::max(0.0, (w - 6) / kCharPx));
    if (fit >= 3) {
      std::string label = f.name.size() <= fit ? f.name : f.name.substr(0, fit - 2) + "..";
      absl::StrAppendFormat(&out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", x + 3, y + kFrameHeightPx - 4.5,
                            XmlEscape(label));
    }
    out += "</g>\n";
    double cx = x_ns;
    for (const auto& [name, c] : f.children) {
      const Frame& child = tree_.frame(c);
      if (static_cast<double>(child.ns) >= min_ns_ && child.ns > 0) Draw(c, cx, depth + 1, max_abs, out);
      cx += static_cast<double>(child.ns);
    }
  }

 private:
  const Tree& tree_;
  const bool diff_;
  const double min_ns_;
  const int height_frames_;
};

std::string Svg(const Tree& tree, bool diff, const std::string& title, double min_share) {
  const int frames = tree.Depth(0);
  const double height = kTitlePx + frames * kFrameHeightPx + 24;
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); } "
      ".title { font-size: 17px; } .frame:hover rect { stroke: black; stroke-width: 0.5; }</style>\n"
      "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,248)\"/>\n"
      "<text class=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">%s</text>\n",
      kWidthPx, height, kWidthPx, height, kWidthPx / 2, XmlEscape(title));
  const Frame& root = tree.frame(0);
  if (root.ns <= 0) {
    absl::StrAppendFormat(&out, "<text x=\"%.0f\" y=\"%.0f\">no CPU time recorded</text>\n</svg>\n", kPadPx,
                          kTitlePx + 16);
    return out;
  }
  Renderer r(tree, diff, min_share, frames);
  r.Draw(0, 0, 0, diff ? r.MaxAbsDelta(0) : 0, out);
  absl::StrAppendFormat(&out, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", kPadPx, height - 8,
                        XmlEscape(diff ? "widths: the variant's CPU time; colour: its share against the baseline's (scaled to the same total), red more, blue less"
                                    : "widths: CPU time by call stack (simulated); hover for times"));
  out += "</svg>\n";
  return out;
}

}  // namespace

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string FoldedStacks(const std::vector<stats::StackRow>& stacks) {
  std::string out;
  for (const stats::StackRow& s : stacks) absl::StrAppend(&out, s.stack, " ", s.ns, "\n");
  return out;
}

std::string FlameGraphSvg(const std::vector<stats::StackRow>& stacks, const std::string& title, double min_share) {
  Tree tree;
  for (const stats::StackRow& s : stacks) tree.Add(s.stack, s.ns, /*baseline=*/false);
  return Svg(tree, /*diff=*/false, title, min_share);
}

std::string DiffFlameGraphSvg(const std::vector<stats::StackRow>& baseline,
                              const std::vector<stats::StackRow>& variant, const std::string& title,
                              double min_share) {
  // difffolded.pl -n: the baseline scaled to the variant's total, so that
  // colours show where the CPU time's shares moved.
  int64_t base_total = 0, var_total = 0;
  for (const stats::StackRow& s : baseline) base_total += s.ns;
  for (const stats::StackRow& s : variant) var_total += s.ns;
  const double scale = base_total > 0 ? static_cast<double>(var_total) / static_cast<double>(base_total) : 1.0;
  Tree tree;
  for (const stats::StackRow& s : variant) tree.Add(s.stack, s.ns, /*baseline=*/false);
  for (const stats::StackRow& s : baseline) {
    tree.Add(s.stack, static_cast<int64_t>(std::llround(static_cast<double>(s.ns) * scale)), /*baseline=*/true);
  }
  return Svg(tree, /*diff=*/true, title, min_share);
}

}  // namespace blklab::report
