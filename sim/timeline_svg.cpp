// SVG timelines of partitioned and pipelined steps (timeline_svg.h).
#include "sim/timeline_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/report.h"

namespace spora::sim {

namespace {

struct Box {
  double start, end;
  int key;  // index into the legend
  std::string title;
};
struct Lane {
  std::string label;
  std::vector<Box> boxes;
};
struct Key {
  const char* name;
  const char* color;
};

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string draw(const std::string& title, const std::vector<Key>& keys,
                 const std::vector<Lane>& lanes, double span) {
  const double left = 170, width = 1000, lane = 16, top = 60;
  const double height = top + static_cast<double>(lanes.size()) * (lane + 2) + 40;
  if (span <= 0) span = 1;
  auto x = [&](double t) { return left + width * t / span; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      left + width + 30, height);
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += fmt::format("<text x=\"10\" y=\"18\" font-size=\"13\">{}</text>\n", xml_escape(title));
  double kx = 10;
  for (const Key& k : keys) {
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"28\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"38\">{}</text>\n",
        kx, k.color, kx + 16, k.name);
    kx += 110;
  }
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = top + static_cast<double>(i) * (lane + 2);
    out += fmt::format("<text x=\"10\" y=\"{:.1f}\">{}</text>\n", y + lane - 4,
                       xml_escape(lanes[i].label));
    for (const Box& b : lanes[i].boxes)
      out += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\">"
          "<title>{}</title></rect>\n",
          x(b.start), y, std::max(0.5, x(b.end) - x(b.start)), lane - 2,
          keys[static_cast<std::size_t>(b.key)].color, xml_escape(b.title));
  }
  out += svg_time_axis(left, width, top + static_cast<double>(lanes.size()) * (lane + 2) + 5, span);
  out += "</svg>\n";
  return out;
}

std::string ms(double seconds) { return fmt::format("{:.4f} ms", seconds * 1e3); }

std::size_t shown(std::size_t n, int max_lanes) {
  return max_lanes > 0 ? std::min(n, static_cast<std::size_t>(max_lanes)) : n;
}

}  // namespace

std::string svg_time_axis(double left, double width, double y, double span) {
  std::string out = fmt::format(
      "<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n", left, y,
      left + width, y);
  auto x = [&](double t) { return left + width * t / span; };
  double step = std::pow(10, std::floor(std::log10(span)));
  if (span / step < 2.5)
    step /= 5;
  else if (span / step < 5)
    step /= 2;
  for (int k = 0; k * step <= span * (1 + 1e-9); ++k) {
    const double t = k * step;
    out += fmt::format(
        "<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" "
        "stroke=\"black\"/><text x=\"{:.2f}\" y=\"{:.1f}\" "
        "text-anchor=\"middle\">{:g} ms</text>\n",
        x(t), y, x(t), y + 4, x(t), y + 16, t * 1e3);
  }
  return out;
}

std::string spmd_svg_timeline(const ClusterSpec& cluster, const SpmdSimResult& r,
                              const std::string& title, int max_lanes) {
  const std::vector<Key> keys{{"compute", "#4e79a7"}, {"collectives", "#b07aa1"}};
  std::vector<Lane> lanes;
  for (std::size_t k = 0; k < shown(r.compute_intervals.size(), max_lanes); ++k) {
    const std::string who = rank_label(cluster, static_cast<int>(k));
    Lane compute{who + " compute", {}}, comm{who + " comm", {}};
    for (const Interval& i : r.compute_intervals[k])
      compute.boxes.push_back({i.start, i.end, 0, "compute, " + ms(i.end - i.start)});
    for (const Interval& i : r.comm_intervals[k])
      comm.boxes.push_back({i.start, i.end, 1, "collective, " + ms(i.end - i.start)});
    lanes.push_back(std::move(compute));
    lanes.push_back(std::move(comm));
  }
  return draw(fmt::format("{}: step {}", title, ms(r.step_seconds)), keys, lanes, r.step_seconds);
}

std::string pipeline_svg_timeline(const PipelineSimResult& r, const std::string& title,
                                  int max_lanes) {
  const std::vector<Key> keys{{"forward", "#4e79a7"},
                              {"recompute", "#76b7b2"},
                              {"backward", "#f28e2b"},
                              {"gradient sync", "#b07aa1"},
                              {"update", "#59a14f"}};
  std::vector<Lane> lanes;
  for (std::size_t s = 0; s < shown(r.events.size(), max_lanes); ++s) {
    Lane lane{fmt::format("stage {}", s), {}};
    for (const PipelineEvent& e : r.events[s]) {
      const int key = e.kind == 'F'   ? 0
                      : e.kind == 'R' ? 1
                      : e.kind == 'B' ? 2
                      : e.kind == 'S' ? 3
                                      : 4;
      const std::string what = e.micro_batch >= 0
                                   ? fmt::format("{}{}", e.kind, e.micro_batch)
                                   : std::string(keys[static_cast<std::size_t>(key)].name);
      lane.boxes.push_back({e.start, e.end, key, what + ", " + ms(e.end - e.start)});
    }
    lanes.push_back(std::move(lane));
  }
  return draw(fmt::format("{}: step {}, bubble {:.1f}%", title, ms(r.step_seconds),
                          r.bubble_fraction * 100),
              keys, lanes, r.step_seconds);
}

}  // namespace spora::sim
