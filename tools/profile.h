// `spora run --profile FILE.json`: where a graph-mode run spends its time. Every node the
// interpreter runs becomes a complete event of a Chrome trace (chrome://tracing, Perfetto):
// primitives by name, fused groups as fused[mul+gelu+...], calls of graphs as "call @g", loops
// and conditionals by their primitive, nested by call depth, each with its result type and the
// source line it came from. The summary printed after the run ranks the primitives and fused
// groups (leaves: time inside calls and loops is counted once, at its leaves) by total time.
// The timeline keeps the first `max_events` events (a long training run would otherwise write
// gigabytes); the summary counts every event. The file is written atomically.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/interpreter.h"

namespace spora::tools {

class RunProfiler {
 public:
  explicit RunProfiler(const lang::SourceManager& sources, size_t max_events = 200000);
  // The hook to give Interpreter::set_trace (it refers to this profiler).
  sem::TraceHook hook();
  // Writes the trace to `path` (atomically) and the summary (`rows` lines) to `summary`.
  void write(const std::string& path, std::ostream& summary, size_t rows = 15) const;

 private:
  struct Event {
    std::string name, type, where;
    double start_us, dur_us;
    int depth;
  };
  struct Total {
    size_t calls = 0;
    double seconds = 0;
  };
  void record(const sem::TraceEvent& e);
  std::string name_of(const ir::Node& n);

  const lang::SourceManager& sources_;
  size_t max_events_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
  std::map<std::string, Total> leaves_;
  double top_level_seconds_ = 0;
  std::map<const ir::Graph*, std::string> fused_names_;
};

}  // namespace spora::tools
