// `spora run --profile FILE.json`: where a graph-mode run spends its time. Every node the
// interpreter runs becomes a complete event of a Chrome trace (chrome://tracing, Perfetto):
// primitives by name, fused groups as fused[mul+gelu+...], calls of graphs as "call @g", loops
// and conditionals by their primitive, nested by call depth, each with its result type and the
// source line it came from. The summary printed after the run ranks the primitives and fused
// groups (leaves: time inside calls and loops is counted once, at its leaves) by total time.
// The timeline keeps the first `max_events` events (a long training run would otherwise write
// gigabytes); the summary counts every event. The file is written atomically.
//
// Sharded runs of the training-step harness (`spora train-step --strategy s.json --ranks N
// --profile FILE.json`, backends/distributed/train_step.h): every rank profiles its own step,
// with its rank as the trace's process id ("rank 0", "rank 1", ...) and the time counted from a
// barrier all ranks left together; each writes FILE.rank<r>.json, then rank 0 merges them into
// FILE.json (merge_rank_traces) and removes them, so one timeline shows every rank and where
// each waited in a collective.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/interpreter.h"

namespace spora::runtime {

class RunProfiler {
 public:
  // `sources` may be null (events then carry no source location); `pid`: the rank.
  explicit RunProfiler(const lang::SourceManager* sources, size_t max_events = 200000, int pid = 0);
  // The hook to give Interpreter::set_trace (it refers to this profiler).
  sem::TraceHook hook();
  // Writes the trace to `path` (atomically) and the summary (`rows` lines) to `summary`.
  // `shown`: the path the summary names instead of `path` (a rank's trace, merged later).
  void write(const std::string& path, std::ostream& summary, size_t rows = 15,
             const std::string& shown = "") const;
  // A span the caller timed itself (a pipeline's "forward 3", a receive, a parameter's
  // update), at `depth`; `leaf`: counted in the summary like a primitive (time not inside any
  // interpreted node); `type`: what it worked on (the trace's args.type, as a primitive's result
  // type); `param`: the parameter it worked on (args.param: an update's).
  void add_span(const std::string& name, std::chrono::steady_clock::time_point start,
                double seconds, int depth, bool leaf, const std::string& type = "",
                const std::string& param = "");
  // Added to the depth of every interpreted node (1 when the caller's spans enclose them).
  void set_depth_offset(int d) { depth_offset_ = d; }
  // Seconds spent in leaf events whose name `pred` accepts (e.g. the collectives).
  template <class Pred>
  double leaf_seconds(Pred pred) const {
    double s = 0;
    for (const auto& [name, t] : leaves_)
      if (pred(name)) s += t.seconds;
    return s;
  }

 private:
  struct Event {
    std::string name, type, where, param;
    double start_us, dur_us;
    int depth;
  };
  struct Total {
    size_t calls = 0;
    double seconds = 0;
  };
  void record(const sem::TraceEvent& e);
  std::string name_of(const ir::Node& n);

  const lang::SourceManager* sources_;
  size_t max_events_;
  int pid_;
  int depth_offset_ = 0;
  std::chrono::steady_clock::time_point t0_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
  std::map<std::string, Total> leaves_;
  double top_level_seconds_ = 0;
  std::map<const ir::Graph*, std::string> fused_names_;
};

// The name of rank r's trace for `path`: FILE.json -> FILE.rank<r>.json.
std::string rank_trace_path(const std::string& path, int rank);
// Merges the traces of ranks 0..ranks-1 (rank_trace_path) into `path` (atomically), with a
// process name per rank, and removes them. Throws lang::UserError naming a missing or
// unreadable rank trace (on several machines without a shared file system).
void merge_rank_traces(const std::string& path, int ranks);

}  // namespace spora::runtime
