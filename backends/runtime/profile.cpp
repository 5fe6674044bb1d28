// Chrome traces of interpreter runs and their summary (profile.h).
#include "backends/runtime/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/runtime/data/files.h"
#include "semantics/passes/fusion.h"

namespace spora::runtime {

RunProfiler::RunProfiler(const lang::SourceManager* sources, size_t max_events, int pid)
    : sources_(sources),
      max_events_(max_events),
      pid_(pid),
      t0_(std::chrono::steady_clock::now()) {}

sem::TraceHook RunProfiler::hook() {
  return [this](const sem::TraceEvent& e) { record(e); };
}

// fused[matmul+add+relu] for a fused group (its members, without tuple plumbing).
std::string RunProfiler::name_of(const ir::Node& n) {
  if (n.prim) return n.prim->name;
  if (!n.callee) return "apply";
  if (!passes::is_fused_graph(*n.callee)) return "call @" + n.callee->name;
  auto it = fused_names_.find(n.callee);
  if (it != fused_names_.end()) return it->second;
  std::string members;
  for (const ir::Node* m : n.callee->nodes)
    if (m->is_apply() && m->prim && m->prim->name != "make_tuple" && m->prim->name != "tuple_get")
      members += (members.empty() ? "" : "+") + m->prim->name;
  return fused_names_[n.callee] = "fused[" + members + "]";
}

void RunProfiler::record(const sem::TraceEvent& e) {
  const ir::Node& n = *e.node;
  if (!n.is_apply()) return;
  const double now_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  const std::string name = name_of(n);
  bool leaf = n.callee ? passes::is_fused_graph(*n.callee) : true;
  for (const ir::Node* x : n.inputs) leaf = leaf && !(x->is_constant() && x->graph_value);
  if (leaf) {
    Total& t = leaves_[name];
    ++t.calls;
    t.seconds += e.seconds;
  }
  if (e.depth + depth_offset_ == 0) top_level_seconds_ += e.seconds;
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  std::string where;
  if (sources_ && n.loc.valid())
    where = fmt::format("{}:{}:{}", sources_->path(n.loc.file), n.loc.line, n.loc.col);
  events_.push_back({name, n.type ? n.type->str() : std::string(), std::move(where), "",
                     now_us - e.seconds * 1e6, e.seconds * 1e6, e.depth + depth_offset_});
}

void RunProfiler::add_span(const std::string& name, std::chrono::steady_clock::time_point start,
                           double seconds, int depth, bool leaf, const std::string& type,
                           const std::string& param) {
  if (leaf) {
    Total& t = leaves_[name];
    ++t.calls;
    t.seconds += seconds;
  }
  if (depth == 0) top_level_seconds_ += seconds;
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  const double start_us = std::chrono::duration<double, std::micro>(start - t0_).count();
  events_.push_back({name, type, "", param, start_us, seconds * 1e6, depth});
}

void RunProfiler::write(const std::string& path, std::ostream& summary, size_t rows,
                        const std::string& shown) const {
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : events_) {
    nlohmann::json args = {{"type", e.type}, {"depth", e.depth}};
    if (!e.where.empty()) args["source"] = e.where;
    if (!e.param.empty()) args["param"] = e.param;
    events.push_back({{"name", e.name},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.dur_us},
                      {"pid", pid_},
                      {"tid", 0},
                      {"args", std::move(args)}});
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  data::write_file_atomic(path, trace.dump() + "\n");

  std::vector<std::pair<std::string, Total>> sorted(leaves_.begin(), leaves_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double leaf_total = 0;
  for (const auto& [name, t] : sorted) leaf_total += t.seconds;
  summary << fmt::format(
      "profile: {} events, {:.3f} ms in the entry's nodes, {:.3f} ms in primitives and fused "
      "groups; timeline in {}{}\n",
      events_.size() + dropped_, top_level_seconds_ * 1e3, leaf_total * 1e3,
      shown.empty() ? path : shown,
      dropped_ ? fmt::format(" (its first {} events; {} more counted here only)", events_.size(),
                             dropped_)
               : "");
  summary << fmt::format("profile: {:>10} {:>6} {:>8}  {}\n", "ms", "%", "calls",
                         "primitive or fused group");
  for (size_t i = 0; i < sorted.size() && i < rows; ++i) {
    const auto& [name, t] = sorted[i];
    summary << fmt::format("profile: {:>10.3f} {:>5.1f}% {:>8}  {}\n", t.seconds * 1e3,
                           leaf_total > 0 ? 100 * t.seconds / leaf_total : 0.0, t.calls, name);
  }
}

std::string rank_trace_path(const std::string& path, int rank) {
  const std::string ext = ".json";
  const bool json =
      path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  const std::string stem = json ? path.substr(0, path.size() - ext.size()) : path;
  return fmt::format("{}.rank{}.json", stem, rank);
}

void merge_rank_traces(const std::string& path, int ranks) {
  nlohmann::json events = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r) {
    const std::string part = rank_trace_path(path, r);
    std::ifstream f(part);
    if (!f)
      throw lang::UserError(fmt::format(
          "--profile: cannot read rank {}'s trace '{}' (ranks on other machines write theirs "
          "there)",
          r, part));
    nlohmann::json t = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (t.is_discarded() || !t.contains("traceEvents"))
      throw lang::UserError(fmt::format("--profile: rank {}'s trace '{}' is not a trace", r, part));
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", fmt::format("rank {}", r)}}}});
    for (auto& e : t["traceEvents"]) events.push_back(std::move(e));
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  data::write_file_atomic(path, trace.dump() + "\n");
  for (int r = 0; r < ranks; ++r) std::remove(rank_trace_path(path, r).c_str());
}

}  // namespace spora::runtime
