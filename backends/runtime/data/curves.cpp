// Training curves: the Recorder's history as CSV and as a hand-written SVG plot (progress.h).
//
// The SVG has one panel per kind of metric: "loss" (columns whose name contains "loss"; the
// batch values of reported metrics are drawn as a thin line under the epoch curves),
// "accuracy" (names containing "acc") and "other metrics" when any remain. Each panel has axes
// with "nice" ticks (steps of 1, 2 or 5 times a power of ten), grid lines, tick labels, axis
// labels, a title and a legend; epoch values are lines with markers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "backends/runtime/data/files.h"
#include "backends/runtime/data/progress.h"

namespace spora::runtime::data {

namespace {

const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A step of 1, 2 or 5 times a power of ten giving about `target` intervals over the range.
double nice_step(double range, int target) {
  if (!(range > 0)) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

std::string tick_label(double v, double step) {
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return buf;
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool thin = false;  // per-batch values: no markers
};

struct Panel {
  std::string title, ylabel;
  std::vector<Series> series;
};

// One panel of size w x h at (x0, y0).
void draw_panel(std::string& out, const Panel& p, int index, double x0, double y0, double w, double h) {
  const double left = x0 + 62, right = x0 + w - 16, top = y0 + 36, bottom = y0 + h - 46;
  // The y range fits the curves, leaving out the first tenth of the per-batch values when
  // there are epoch curves too (the first batches' loss is far above the rest; it is clipped).
  const bool has_epoch_curves =
      std::any_of(p.series.begin(), p.series.end(), [](const Series& s) { return !s.thin; });
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  for (const Series& s : p.series)
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto [x, y] = s.points[i];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      if (s.thin && has_epoch_curves && i < s.points.size() / 10) continue;
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax - xmin < 1e-12) xmin -= 0.5, xmax += 0.5;
  if (ymax - ymin < 1e-12) ymin -= 0.5, ymax += 0.5;
  // Epochs are whole numbers: no ticks between them once the axis spans more than one.
  double xstep = nice_step(xmax - xmin, 6);
  if (xmax - xmin >= 1) xstep = std::max(xstep, 1.0);
  const double ystep = nice_step(ymax - ymin, 5);
  const double ylo = std::floor(ymin / ystep) * ystep, yhi = std::ceil(ymax / ystep) * ystep;
  const double xlo = xmin, xhi = xmax;
  auto X = [&](double x) { return left + (x - xlo) / (xhi - xlo) * (right - left); };
  auto Y = [&](double y) { return bottom - (y - ylo) / (yhi - ylo) * (bottom - top); };

  out += "<text x=\"" + num((left + right) / 2) + "\" y=\"" + num(y0 + 22) +
         "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" + escape(p.title) + "</text>\n";
  // Grid and ticks.
  for (double y = ylo; y <= yhi + ystep * 1e-6; y += ystep) {
    out += "<line x1=\"" + num(left) + "\" y1=\"" + num(Y(y)) + "\" x2=\"" + num(right) + "\" y2=\"" + num(Y(y)) +
           "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(Y(y) + 4) + "\" text-anchor=\"end\" font-size=\"11\">" +
           tick_label(y, ystep) + "</text>\n";
  }
  const double xfirst = std::ceil(xlo / xstep - 1e-9) * xstep;
  for (double x = xfirst; x <= xhi + xstep * 1e-6; x += xstep) {
    out += "<line x1=\"" + num(X(x)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(X(x)) + "\" y2=\"" + num(bottom) +
           "\" stroke=\"#f0f0f0\"/>\n";
    out += "<line x1=\"" + num(X(x)) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(X(x)) + "\" y2=\"" +
           num(bottom + 5) + "\" stroke=\"#333\"/>\n";
    out += "<text x=\"" + num(X(x)) + "\" y=\"" + num(bottom + 18) + "\" text-anchor=\"middle\" font-size=\"11\">" +
           tick_label(x, xstep) + "</text>\n";
  }
  // Axes and their labels.
  out += "<line x1=\"" + num(left) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(right) + "\" y2=\"" + num(bottom) +
         "\" stroke=\"#333\"/>\n";
  out += "<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" + num(bottom) +
         "\" stroke=\"#333\"/>\n";
  out += "<text x=\"" + num((left + right) / 2) + "\" y=\"" + num(bottom + 36) +
         "\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n";
  out += "<text x=\"" + num(x0 + 16) + "\" y=\"" + num((top + bottom) / 2) +
         "\" text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 " + num(x0 + 16) + " " +
         num((top + bottom) / 2) + ")\">" + escape(p.ylabel) + "</text>\n";
  // Curves: thin ones first, under the epoch curves; all clipped to the plot area.
  const std::string clip = "plot" + std::to_string(index);
  out += "<clipPath id=\"" + clip + "\"><rect x=\"" + num(left) + "\" y=\"" + num(top - 4) + "\" width=\"" +
         num(right - left + 4) + "\" height=\"" + num(bottom - top + 4) + "\"/></clipPath>\n";
  size_t color = 0;
  std::vector<std::pair<const Series*, const char*>> legend;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Series& s : p.series) {
      if (s.thin != (pass == 0)) continue;
      const char* c = kColors[color++ % (sizeof kColors / sizeof *kColors)];
      legend.emplace_back(&s, c);
      std::string pts;
      for (const auto& [x, y] : s.points)
        if (std::isfinite(x) && std::isfinite(y)) pts += num(X(x)) + "," + num(Y(y)) + " ";
      out += "<polyline fill=\"none\" stroke=\"" + std::string(c) + "\" stroke-width=\"" + (s.thin ? "1" : "2") +
             "\"" + (s.thin ? " stroke-opacity=\"0.45\"" : "") + " clip-path=\"url(#" + clip + ")\" points=\"" + pts +
             "\"/>\n";
      if (!s.thin)
        for (const auto& [x, y] : s.points)
          if (std::isfinite(x) && std::isfinite(y))
            out += "<circle cx=\"" + num(X(x)) + "\" cy=\"" + num(Y(y)) + "\" r=\"3\" fill=\"" + c + "\"/>\n";
    }
  }
  // Legend, inside the plot at the right: at the top, or at the bottom when fewer points lie
  // there (rising accuracy curves).
  size_t longest = 0;
  for (const auto& [series, c] : legend) longest = std::max(longest, series->name.size());
  const double lw = 46 + 6.4 * static_cast<double>(longest), lh = 18.0 * static_cast<double>(legend.size()) + 8;
  const double lx = right - lw - 6;
  auto covered = [&](double ly) {
    int n = 0;
    for (const Series& s : p.series)
      for (const auto& [x, y] : s.points)
        if (X(x) >= lx && X(x) <= lx + lw && Y(y) >= ly && Y(y) <= ly + lh) ++n;
    return n;
  };
  const double ly = covered(bottom - lh - 6) < covered(top + 6) ? bottom - lh - 6 : top + 6;
  out += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly) + "\" width=\"" + num(lw) + "\" height=\"" + num(lh) +
         "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999\"/>\n";
  for (size_t i = 0; i < legend.size(); ++i) {
    const double yy = ly + 14 + 18.0 * static_cast<double>(i);
    out += "<line x1=\"" + num(lx + 8) + "\" y1=\"" + num(yy - 4) + "\" x2=\"" + num(lx + 30) + "\" y2=\"" +
           num(yy - 4) + "\" stroke=\"" + legend[i].second + "\" stroke-width=\"" +
           (legend[i].first->thin ? "1" : "2") + "\"/>\n";
    out += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(yy) + "\" font-size=\"11\">" + escape(legend[i].first->name) +
           "</text>\n";
  }
}

// Per-batch values smoothed by a trailing mean over a thirtieth of the run (TensorBoard-like),
// then at most `limit` points: means of consecutive runs.
std::vector<std::pair<double, double>> thin_out(std::vector<std::pair<double, double>> pts, size_t limit) {
  const size_t window = std::max<size_t>(1, pts.size() / 30);
  std::vector<std::pair<double, double>> smooth(pts.size());
  double sum = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    sum += pts[i].second;
    if (i >= window) sum -= pts[i - window].second;
    smooth[i] = {pts[i].first, sum / static_cast<double>(std::min(i + 1, window))};
  }
  pts = std::move(smooth);
  if (pts.size() <= limit) return pts;
  const size_t run = (pts.size() + limit - 1) / limit;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < pts.size(); i += run) {
    double sx = 0, sy = 0;
    const size_t end = std::min(pts.size(), i + run);
    for (size_t j = i; j < end; ++j) sx += pts[j].first, sy += pts[j].second;
    out.emplace_back(sx / static_cast<double>(end - i), sy / static_cast<double>(end - i));
  }
  return out;
}

}  // namespace

std::string Recorder::csv() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> cols;
  for (const Row& r : history_)
    for (const auto& [n, v] : r.values)
      if (std::find(cols.begin(), cols.end(), n) == cols.end()) cols.push_back(n);
  std::string out = "epoch";
  for (const auto& c : cols) out += "," + c;
  out += "\n";
  char buf[40];
  for (const Row& r : history_) {
    std::snprintf(buf, sizeof buf, "%.10g", r.epoch);
    out += buf;
    for (const auto& c : cols) {
      out += ",";
      for (const auto& [n, v] : r.values)
        if (n == c) {
          std::snprintf(buf, sizeof buf, "%.7g", v);
          out += buf;
          break;
        }
    }
    out += "\n";
  }
  return out;
}

std::string Recorder::svg() const {
  std::vector<std::string> cols = columns();
  std::lock_guard<std::mutex> lock(mu_);
  Panel loss{"loss", "loss", {}}, acc{"accuracy", "accuracy", {}}, other{"other metrics", "value", {}};
  auto panel_of = [&](const std::string& n) -> Panel& {
    if (n.find("loss") != std::string::npos) return loss;
    if (n.find("acc") != std::string::npos) return acc;
    return other;
  };
  // Per-batch values, spread over (previous epoch, this epoch].
  std::map<std::string, Series> thin;
  for (const Batches& b : batches_) {
    if (b.values.empty() || b.epoch_row >= history_.size()) continue;
    const double x1 = history_[b.epoch_row].epoch;
    const double x0 = b.epoch_row > 0 ? history_[b.epoch_row - 1].epoch : x1 - 1;
    Series& s = thin[b.name];
    s.name = b.name + " (batches, smoothed)";
    s.thin = true;
    for (size_t j = 0; j < b.values.size(); ++j)
      s.points.emplace_back(x0 + (x1 - x0) * static_cast<double>(j + 1) / static_cast<double>(b.values.size()),
                            b.values[j]);
  }
  for (auto& [n, s] : thin) {
    s.points = thin_out(std::move(s.points), 300);
    panel_of(n).series.push_back(std::move(s));
  }
  for (const auto& c : cols) {
    Series s{c, {}, false};
    for (const Row& r : history_)
      for (const auto& [n, v] : r.values)
        if (n == c) s.points.emplace_back(r.epoch, v);
    panel_of(c).series.push_back(std::move(s));
  }
  std::vector<const Panel*> panels;
  for (const Panel* p : {&loss, &acc, &other})
    if (!p->series.empty()) panels.push_back(p);
  if (panels.empty()) panels.push_back(&loss);
  const double pw = 480, ph = 340;
  const double width = pw * static_cast<double>(panels.size());
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(width) + "\" height=\"" + num(ph) + "\" viewBox=\"0 0 " + num(width) + " " + num(ph) +
                    "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    draw_panel(out, *panels[i], static_cast<int>(i), pw * static_cast<double>(i), 0, pw, ph);
  out += "</svg>\n";
  return out;
}

void Recorder::save_curves(const std::string& prefix) const {
  write_files_atomic({{prefix + ".csv", csv()}, {prefix + ".svg", svg()}});
}

}  // namespace spora::runtime::data
