// The text report, the Chrome trace and the SVG timeline of a simulated step (report.h).
#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/cost_model.h"
#include "sim/platform.h"
#include "sim/reuse.h"
#include "sim/timeline_svg.h"

namespace spora::sim {

namespace {

std::string ms(double seconds) { return fmt::format("{:.4f} ms", seconds * 1e3); }
std::string mb(double bytes) {
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.2f} kB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.2f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}
double us(double seconds) { return seconds * 1e6; }

int shown(const TrainSimResult& r, int max_ranks) {
  return max_ranks > 0 ? std::min(max_ranks, r.ranks) : r.ranks;
}

// JSON string contents: our names are plain, but be safe.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// Op i's start on a device: its segment's start plus the ops before it in the segment.
struct OpTimes {
  std::vector<double> start;  // per op
  double update = 0;
};
OpTimes op_times(const TrainSimResult& r, const DeviceTimeline& t) {
  OpTimes o;
  o.start.resize(r.op_seconds.size());
  for (std::size_t s = 0; s < r.segments.size(); ++s) {
    double clock = t.segment_starts[s];
    for (int i = r.segments[s].first_op; i <= r.segments[s].last_op; ++i) {
      o.start[static_cast<std::size_t>(i)] = clock;
      clock += r.op_seconds[static_cast<std::size_t>(i)];
    }
  }
  o.update = t.update_start.empty() ? 0 : t.update_start[0];
  return o;
}

}  // namespace

std::string rank_label(const ClusterSpec& cluster, int rank) {
  return fmt::format("rank{}@{}", rank,
                     device_name(cluster, rank / cluster.devices_per_node,
                                 rank % cluster.devices_per_node));
}

std::string format_report(const ClusterSpec& cluster, const StepProgram& program,
                          const TrainSimResult& r) {
  double flops = 0, bytes = 0;
  int forward = 0, backward = 0, update_ops = 0, uncosted = 0;
  for (const StepOp& op : program.ops) {
    flops += op.cost.flops;
    bytes += op.cost.bytes;
    (op.phase == Phase::Forward ? forward : backward) += 1;
    uncosted += op.costed ? 0 : 1;
  }
  double elements = 0;
  for (const StepParam& p : program.params) {
    elements += static_cast<double>(p.type->numel());
    update_ops += static_cast<int>(p.update.size());
  }
  std::string out;
  out += fmt::format("# spora sim: one data-parallel training step on {}\n", cluster.summary());
  out += fmt::format("# {} ranks x batch {} = {} samples; {} parameters ({:.0f} elements, {})\n",
                     r.ranks, program.batch, r.global_batch, program.params.size(), elements,
                     mb(program.param_bytes()));
  out += fmt::format(
      "# per rank: {} ops ({} forward, {} backward) + {} update ops; {:.4g} GFLOP, {} moved\n",
      program.ops.size(), forward, backward, update_ops, flops / 1e9, mb(bytes));
  out += fmt::format("# gradients: {} bucket{} ({}), all-reduce {} ({} model)\n",
                     r.buckets.size(), r.buckets.size() == 1 ? "" : "s",
                     [&] {
                       std::string s;
                       for (std::size_t b = 0; b < r.buckets.size() && b < 8; ++b)
                         s += (b ? ", " : "") + mb(r.buckets[b].bytes);
                       if (r.buckets.size() > 8) s += ", ...";
                       return s;
                     }(),
                     r.algorithm, comm_model_name(r.comm_model));
  for (const std::string& w : program.warnings) out += "# note: " + w + "\n";
  if (uncosted)
    out += fmt::format("# note: {} ops have no cost rule and were estimated as elementwise\n",
                       uncosted);
  out += fmt::format("step time         {}\n", ms(r.step_seconds));
  out += fmt::format("throughput        {:.1f} samples/s\n", r.throughput);
  out += fmt::format("compute per rank  {} (forward and backward {}, update {})\n",
                     ms(r.devices.empty() ? 0 : r.devices[0].compute),
                     ms(r.devices.empty() ? 0 : r.devices[0].compute - r.update_seconds),
                     ms(r.update_seconds));
  const DeviceReport& d0 = r.devices.front();
  out += fmt::format("peak memory       {} per device: parameters {}, gradients {}, optimizer "
                     "{}, activations {} (of {})\n",
                     mb(d0.peak_memory()), mb(d0.parameters), mb(d0.gradients),
                     mb(d0.optimizer_state), mb(d0.activations), mb(cluster.device.memory_bytes));
  if (d0.peak_memory() > cluster.device.memory_bytes)
    out += "# warning: the step does not fit in a device's memory\n";
  out += fmt::format("{:<24} {:>12} {:>12} {:>12} {:>12}\n", "device", "compute", "comm", "idle",
                     "exposed comm");
  auto row = [&](const std::string& name, const DeviceReport& d) {
    out += fmt::format("{:<24} {:>12} {:>12} {:>12} {:>12}\n", name, ms(d.compute),
                       ms(d.communication), ms(d.idle), ms(d.exposed_communication));
  };
  const int listed = r.ranks <= 16 ? r.ranks : 8;
  for (int k = 0; k < listed; ++k)
    row(rank_label(cluster, k), r.devices[static_cast<std::size_t>(k)]);
  if (listed < r.ranks) {
    out += fmt::format("... {} more devices\n", r.ranks - listed);
    DeviceReport lo = r.devices[0], hi = r.devices[0];
    for (const DeviceReport& d : r.devices) {
      lo.compute = std::min(lo.compute, d.compute), hi.compute = std::max(hi.compute, d.compute);
      lo.communication = std::min(lo.communication, d.communication);
      hi.communication = std::max(hi.communication, d.communication);
      lo.idle = std::min(lo.idle, d.idle), hi.idle = std::max(hi.idle, d.idle);
      lo.exposed_communication = std::min(lo.exposed_communication, d.exposed_communication);
      hi.exposed_communication = std::max(hi.exposed_communication, d.exposed_communication);
    }
    row("min over devices", lo);
    row("max over devices", hi);
  }
  return out;
}

std::string chrome_trace(const ClusterSpec& cluster, const StepProgram& program,
                         const TrainSimResult& r, int max_ranks) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto event = [&](const std::string& text) {
    out += (first ? "" : ",\n") + text;
    first = false;
  };
  auto box = [&](const std::string& name, const std::string& cat, int pid, int tid, double start,
                 double seconds, const std::string& args) {
    event(fmt::format("{{\"name\": \"{}\", \"cat\": \"{}\", \"ph\": \"X\", \"ts\": {:.3f}, "
                      "\"dur\": {:.3f}, \"pid\": {}, \"tid\": {}, \"args\": {{{}}}}}",
                      escape(name), cat, us(start), us(seconds), pid, tid, args));
  };
  for (int k = 0; k < shown(r, max_ranks); ++k) {
    event(fmt::format("{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"args\": "
                      "{{\"name\": \"{}\"}}}}",
                      k, rank_label(cluster, k)));
    event(fmt::format("{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {}, \"args\": "
                      "{{\"sort_index\": {}}}}}",
                      k, k));
    for (int tid = 0; tid < 2; ++tid)
      event(fmt::format("{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, "
                        "\"args\": {{\"name\": \"{}\"}}}}",
                        k, tid, tid == 0 ? "compute" : "comm"));
    const DeviceTimeline& t = r.timelines[static_cast<std::size_t>(k)];
    const OpTimes times = op_times(r, t);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      if (r.op_seconds[i] <= 0) continue;
      const StepOp& op = program.ops[i];
      box(std::string(op.name()), std::string(phase_name(op.phase)), k, 0, times.start[i],
          r.op_seconds[i],
          fmt::format("\"op\": {}, \"output\": \"{}\", \"flops\": {:.0f}, \"bytes\": {:.0f}", i,
                      op.output ? op.output->str() : "", op.cost.flops, op.cost.bytes));
    }
    double clock = times.update;
    // The updates' times as the simulation took them (update_seconds), op by op.
    const CostModel model(cluster.device, "");
    std::vector<const StepOp*> sequence;
    for (const StepOp& op : program.ops) sequence.push_back(&op);
    for (const StepParam& p : program.params)
      for (const StepOp& op : p.update) sequence.push_back(&op);
    const std::vector<double> seconds = op_seconds(model, sequence);
    std::size_t next = program.ops.size();
    for (const StepParam& p : program.params)
      for (const StepOp& op : p.update) {
        const double s = seconds[next++];
        box(std::string(op.name()), "update", k, 0, clock, s,
            fmt::format("\"parameter\": \"{}\", \"flops\": {:.0f}, \"bytes\": {:.0f}",
                        escape(p.name), op.cost.flops, op.cost.bytes));
        clock += s;
      }
    for (std::size_t b = 0; b < r.buckets.size(); ++b) {
      const std::string args = fmt::format("\"bucket\": {}, \"bytes\": {:.0f}, \"gradients\": {}",
                                           b, r.buckets[b].bytes, r.buckets[b].params.size());
      const Interval& in = t.copy_in[b];
      const Interval& ar = t.all_reduce[b];
      const Interval& outc = t.copy_out[b];
      if (in.end > in.start)
        box(fmt::format("copy into bucket {}", b), "comm", k, 1, in.start, in.end - in.start, args);
      box(fmt::format("all-reduce bucket {}", b), "comm", k, 1, ar.start, ar.end - ar.start,
          args + fmt::format(", \"algorithm\": \"{}\"", r.algorithm));
      if (outc.end > outc.start)
        box(fmt::format("copy out of bucket {}", b), "comm", k, 1, outc.start,
            outc.end - outc.start, args);
    }
  }
  out += "\n]}\n";
  return out;
}

std::string svg_timeline(const ClusterSpec& cluster, const StepProgram& program,
                         const TrainSimResult& r, int max_ranks) {
  const int ranks = shown(r, max_ranks);
  const double left = 170, width = 1000, lane = 16, gap = 10, top = 60;
  const double height = top + ranks * (2 * lane + gap) + 40;
  const double span = r.step_seconds > 0 ? r.step_seconds : 1;
  auto x = [&](double t) { return left + width * t / span; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      left + width + 30, height);
  out += fmt::format("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  out += fmt::format(
      "<text x=\"10\" y=\"18\" font-size=\"13\">one data-parallel step on {}: {} ranks, batch {} "
      "per rank, step {}</text>\n",
      escape(cluster.name), r.ranks, program.batch, ms(r.step_seconds));
  struct Key {
    const char* name;
    const char* color;
  };
  const Key keys[] = {{"forward", "#4e79a7"}, {"backward", "#f28e2b"}, {"update", "#59a14f"},
                      {"all-reduce", "#b07aa1"}, {"bucket copy", "#9c9c9c"}};
  double kx = 10;
  for (const Key& k : keys) {
    out += fmt::format("<rect x=\"{:.1f}\" y=\"28\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                       "<text x=\"{:.1f}\" y=\"38\">{}</text>\n",
                       kx, k.color, kx + 16, k.name);
    kx += 110;
  }
  auto rect = [&](double y, double start, double end, const char* color, const std::string& title) {
    const double w = std::max(0.5, x(end) - x(start));
    out += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\">"
        "<title>{}</title></rect>\n",
        x(start), y, w, lane - 2, color, title);
  };
  for (int k = 0; k < ranks; ++k) {
    const double y = top + k * (2 * lane + gap);
    out += fmt::format("<text x=\"10\" y=\"{:.1f}\">{} compute</text>\n", y + lane - 4,
                       rank_label(cluster, k));
    out += fmt::format("<text x=\"10\" y=\"{:.1f}\">{} comm</text>\n", y + 2 * lane - 4,
                       rank_label(cluster, k));
    const DeviceTimeline& t = r.timelines[static_cast<std::size_t>(k)];
    const OpTimes times = op_times(r, t);
    // Runs of consecutive ops of one phase, as one box each.
    std::size_t i = 0;
    while (i < program.ops.size()) {
      const Phase phase = program.ops[i].phase;
      const double start = times.start[i];
      double end = start;
      std::size_t j = i;
      int count = 0;
      while (j < program.ops.size() && program.ops[j].phase == phase &&
             std::abs(times.start[j] - end) < 1e-12 * (1 + end)) {
        end = times.start[j] + r.op_seconds[j];
        ++j;
        ++count;
      }
      if (j == i) {  // a gap before op i: start a new run there
        end = times.start[i] + r.op_seconds[i];
        j = i + 1;
        count = 1;
      }
      if (end > start)
        rect(y, start, end, phase == Phase::Forward ? keys[0].color : keys[1].color,
             fmt::format("{}: ops {}-{} ({} ops), {}", phase_name(phase), i, j - 1, count,
                         ms(end - start)));
      i = j;
    }
    if (r.update_seconds > 0)
      rect(y, times.update, times.update + r.update_seconds, keys[2].color,
           fmt::format("update of {} parameters, {}", program.params.size(), ms(r.update_seconds)));
    for (std::size_t b = 0; b < r.buckets.size(); ++b) {
      const double cy = y + lane;
      if (t.copy_in[b].end > t.copy_in[b].start)
        rect(cy, t.copy_in[b].start, t.copy_in[b].end, keys[4].color,
             fmt::format("copy into bucket {}", b));
      rect(cy, t.all_reduce[b].start, t.all_reduce[b].end, keys[3].color,
           fmt::format("all-reduce bucket {}: {}, {}", b, mb(r.buckets[b].bytes),
                       ms(t.all_reduce[b].end - t.all_reduce[b].start)));
      if (t.copy_out[b].end > t.copy_out[b].start)
        rect(cy, t.copy_out[b].start, t.copy_out[b].end, keys[4].color,
             fmt::format("copy out of bucket {}", b));
    }
  }
  out += svg_time_axis(left, width, top + ranks * (2 * lane + gap) + 5, span);
  out += "</svg>\n";
  return out;
}

}  // namespace spora::sim
