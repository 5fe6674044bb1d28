// Eager execution of the entry graph as it is lowered, and its memory (eager.h).
#include "semantics/eager.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "semantics/interpreter.h"
#include "semantics/registry.h"

namespace spora::sem {

namespace {
std::mutex g_stats_mu;
EagerStats g_last_stats;
TraceHook g_trace;
}  // namespace

void set_eager_trace(TraceHook hook) { g_trace = std::move(hook); }

EagerStats last_eager_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  return g_last_stats;
}

EagerExecutor::EagerExecutor(ir::Module& m, ir::Graph* graph)
    : m_(m), graph_(graph), interp_(std::make_unique<Interpreter>(m)) {
  m_.on_add = [this](ir::Node* n) { run(n); };
  std::lock_guard<std::mutex> lock(g_stats_mu);
  g_last_stats = EagerStats{};
}

EagerExecutor::~EagerExecutor() {
  m_.on_add = nullptr;
  stats_.final_graph_nodes = static_cast<int64_t>(graph_->nodes.size());
  std::lock_guard<std::mutex> lock(g_stats_mu);
  g_last_stats = stats_;
}

const Value* EagerExecutor::value(const ir::Node* n) const {
  auto it = values_.find(n);
  return it == values_.end() ? nullptr : &it->second.value;
}

uint64_t EagerExecutor::seq(const ir::Node* n) const {
  auto it = values_.find(n);
  return it == values_.end() ? UINT64_MAX : it->second.seq;
}

void EagerExecutor::note_sizes() {
  stats_.peak_graph_nodes = std::max(stats_.peak_graph_nodes, static_cast<int64_t>(graph_->nodes.size()));
  stats_.peak_values_held = std::max(stats_.peak_values_held, static_cast<int64_t>(values_.size()));
  if ((stats_.ops_run & 255) == 0) {
    std::lock_guard<std::mutex> lock(g_stats_mu);
    g_last_stats = stats_;
  }
}

void EagerExecutor::run(ir::Node* n) {
  if (n->graph != graph_) return;
  check_interrupt(n->loc);
  Held& held = values_[n];
  held.seq = clock_++;
  if (n->is_constant()) {
    if (n->graph_value) {
      Value v;
      v.kind = Value::Kind::Opaque;
      v.opaque = std::make_shared<GraphRef>(n->graph_value);
      held.value = v;
    } else {
      held.value = n->value;
    }
    note_sizes();
    return;
  }
  std::vector<Value> args;
  args.reserve(n->inputs.size());
  for (const ir::Node* x : n->inputs) {
    auto it = values_.find(x);
    if (it == values_.end()) {
      values_.erase(n);
      throw lang::InternalError("eager: input of %" + (n->prim ? n->prim->name : n->callee->name) +
                                " has not run (or was collected)");
    }
    args.push_back(it->second.value);
  }
  const bool traced = static_cast<bool>(g_trace);
  const auto t0 =
      traced ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  try {
    Value result;
    if (n->callee) {
      if (traced)
        interp_->set_trace([](const TraceEvent& e) {
          TraceEvent nested = e;
          ++nested.depth;
          if (g_trace) g_trace(nested);
        });
      result = interp_->call(n->callee, std::move(args));
      if (traced) interp_->set_trace(nullptr);
    } else if (n->prim->eval) {
      result = kernel_for(*n->prim)(args, n->attrs);
    } else {
      throw lang::InternalError("eager: control flow '" + n->prim->name + "' in eager mode");
    }
    values_[n].value = std::move(result);  // (`held` may have moved: calls can add nodes)
  } catch (const RuntimeError&) {
    values_.erase(n);
    throw;
  } catch (const lang::UserError& e) {
    values_.erase(n);
    throw RuntimeError(e.what(), n->loc);
  }
  ++stats_.ops_run;
  if (traced) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g_trace(TraceEvent{n, &values_[n].value, seconds, 0});
  }
  note_sizes();
}

size_t EagerExecutor::collect(const std::unordered_set<const ir::Node*>& live,
                              const std::unordered_set<const ir::Node*>& keep_inputs) {
  ++stats_.collections;
  size_t removed = 0;
  std::vector<ir::Node*> kept;
  kept.reserve(graph_->nodes.size());
  std::unordered_set<const ir::Node*> erase;
  for (ir::Node* n : graph_->nodes) {
    if (!live.count(n)) {
      // Forgotten: no value, and the node is destroyed. Nodes that name graphs (control flow,
      // calls, graph constants) are only emptied: later layers key state on them.
      values_.erase(n);
      ++removed;
      const bool names_graph = n->graph_value || n->callee || (n->prim && !n->prim->eval);
      if (!names_graph) {
        erase.insert(n);
        continue;
      }
      n->value = Value();
      n->inputs.clear();
      n->inputs.shrink_to_fit();
      n->attrs = Attrs{};
      continue;
    }
    kept.push_back(n);
    if (n->is_apply() && !keep_inputs.count(n)) {
      // Frozen: a constant holding the value it computed, so its inputs may go.
      auto it = values_.find(n);
      if (it == values_.end()) throw lang::InternalError("eager: a live node has no value");
      n->kind = ir::NodeKind::Constant;
      n->value = it->second.value;
      n->prim = nullptr;
      n->callee = nullptr;
      n->inputs.clear();
      n->inputs.shrink_to_fit();
      n->attrs = Attrs{};
    }
  }
  graph_->nodes = std::move(kept);
  m_.erase_nodes(erase);
  stats_.nodes_removed += static_cast<int64_t>(removed);
  note_sizes();
  return removed;
}

}  // namespace spora::sem
