// The reference interpreter (see interpreter.h for the execution model).
#include "semantics/interpreter.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>

#include "semantics/iterable.h"
#include "semantics/liveness.h"

namespace spora::sem {

namespace {
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_interrupt runs in a signal handler");
}  // namespace

void request_interrupt() { g_interrupt.store(true, std::memory_order_relaxed); }
void clear_interrupt() { g_interrupt.store(false, std::memory_order_relaxed); }
bool interrupt_requested() { return g_interrupt.load(std::memory_order_relaxed); }
void check_interrupt(lang::SourceLoc where) {
  if (!g_interrupt.load(std::memory_order_relaxed)) return;
  g_interrupt.store(false, std::memory_order_relaxed);
  throw RuntimeError("interrupted (SIGINT)", where);
}

using ir::Graph;
using ir::Node;

// Where each parameter and node of a graph lives in its frames (params first, then nodes),
// and when each value dies (liveness.h): computed once per graph.
struct Interpreter::Layout {
  std::vector<const Node*> order;  // the params and nodes it was built from
  Liveness live;
  size_t size = 0;

  bool matches(const Graph* g) const {
    if (order.size() != g->params.size() + g->nodes.size()) return false;
    return std::equal(g->params.begin(), g->params.end(), order.begin()) &&
           std::equal(g->nodes.begin(), g->nodes.end(), order.begin() + g->params.size());
  }
};

// One activation of a graph. A slot is pending until its node has run, then live until its
// last use (liveness.h), then released.
struct Interpreter::Frame {
  enum : uint8_t { kPending = 0, kLive = 1, kReleased = 2 };
  const Graph* graph;
  const Frame* parent;  // the active frame of graph->parent (null for top-level graphs)
  const Layout* layout;
  std::vector<Value> slots;
  std::vector<uint8_t> state;

  void release(size_t s) {
    slots[s] = Value();
    state[s] = kReleased;
  }
};

namespace {

// Bytes of stack left on this thread below the caller (SIZE_MAX when unknown).
size_t stack_left() {
  thread_local const char* low = []() -> const char* {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return nullptr;
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    return static_cast<const char*>(addr);
  }();
  if (!low) return SIZE_MAX;
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return here > low ? static_cast<size_t>(here - low) : 0;
}
// What a call must leave for kernels and the unwinder (sanitizer builds use large frames).
constexpr size_t kStackReserve = 512 * 1024;
// The stack of each extra thread deep recursion continues on.
constexpr size_t kHopStack = 64 * 1024 * 1024;

bool truthy(const Value& v, const Node* n) {
  if (!v.is_tensor() || v.tensor.numel() != 1)
    throw lang::InternalError(n->prim->name + ": condition is not a scalar tensor");
  return v.tensor.item() != 0.0;
}

int64_t to_int(const Value& v, const Node* n, const char* what) {
  if (!v.is_tensor() || v.tensor.numel() != 1)
    throw lang::InternalError(n->prim->name + ": " + what + " is not a scalar tensor");
  const Tensor t = host_tensor(v.tensor);  // a device tensor is read through a host copy
  if (t.dtype() == DType::i64) return t.data<int64_t>()[0];
  if (t.dtype() == DType::i32) return t.data<int32_t>()[0];
  return static_cast<int64_t>(t.item());
}

const Graph* graph_operand(const Value& v, const Node* n, size_t i) {
  auto* ref = dynamic_cast<const GraphRef*>(v.opaque.get());
  if (v.kind != Value::Kind::Opaque || !ref)
    throw lang::InternalError(n->prim->name + ": operand " + std::to_string(i) + " is not a graph");
  return ref->graph;
}

// Unpacks the (s'...) tuple a loop body returns (moving the elements out when nothing else
// holds the tuple, so the state keeps one reference per buffer).
std::vector<Value> loop_state(Value result, const Graph* body, size_t expected) {
  if (result.kind != Value::Kind::Tuple || result.items().size() != expected)
    throw lang::InternalError("loop body @" + body->name + " must return a tuple of " +
                              std::to_string(expected) + " values");
  if (result.elems.use_count() == 1) return std::move(*result.elems);
  return std::vector<Value>(result.items());
}

// Counts one level of graph call while alive.
struct DepthGuard {
  int& depth;
  explicit DepthGuard(int& d) : depth(d) { ++depth; }
  ~DepthGuard() { --depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

}  // namespace

FusedKernelHook& fused_kernel_hook() {
  static FusedKernelHook hook;
  return hook;
}
void set_fused_kernel_hook(FusedKernelHook hook) { fused_kernel_hook() = std::move(hook); }

FusedKernelHook current_fused_kernel_hook() { return fused_kernel_hook(); }

PrimitiveHook& primitive_hook() {
  static PrimitiveHook hook;
  return hook;
}
void set_primitive_hook(PrimitiveHook hook) { primitive_hook() = std::move(hook); }

Value apply_primitive(const ir::Node& n, std::vector<Value> in) {
  if (const PrimitiveHook& hook = primitive_hook()) {
    Value result;
    if (hook(n, in, result)) return result;
  }
  return kernel_for(*n.prim)(in, n.attrs);
}

HostValueHook& host_value_hook() {
  static HostValueHook hook;
  return hook;
}
void set_host_value_hook(HostValueHook hook) { host_value_hook() = std::move(hook); }

void to_host_value(Value& v) {
  if (const HostValueHook& hook = host_value_hook(); hook && v.is_tensor()) hook(v);
}

// The value the interpreter itself reads (a condition, a loop bound), whole on this rank.
Value& host_value(Value& v) {
  to_host_value(v);
  return v;
}

CallHook& call_hook() {
  static CallHook hook;
  return hook;
}
void set_call_hook(CallHook hook) { call_hook() = std::move(hook); }

Interpreter::Interpreter(const ir::Module& module) : module_(module) {}
Interpreter::~Interpreter() = default;

Value Interpreter::run_entry(std::vector<Value> args) {
  if (!module_.entry) throw lang::InternalError("the module has no entry graph (@main)");
  return call(module_.entry, std::move(args));
}

Value Interpreter::call(const Graph* g, std::vector<Value> args) {
  if (!g) throw lang::InternalError("Interpreter::call: null graph");
  if (args.size() != g->params.size())
    throw lang::InternalError("@" + g->name + " takes " + std::to_string(g->params.size()) +
                              " arguments, got " + std::to_string(args.size()));
  DepthGuard guard(depth_);
  return run_graph(g, args, nullptr);
}

const Interpreter::Layout& Interpreter::layout(const Graph* g) {
  auto it = layouts_.find(g);
  if (it != layouts_.end() && it->second->matches(g)) return *it->second;
  // First run of g, or g changed since (passes may keep editing a module between runs).
  auto l = std::make_unique<Layout>();
  for (const Node* p : g->params) l->order.push_back(p);
  for (const Node* n : g->nodes) l->order.push_back(n);
  l->live = analyze_liveness(*g);
  l->size = l->order.size();
  auto& stored = layouts_[g];
  stored = std::move(l);
  return *stored;
}

const Interpreter::Frame* Interpreter::frame_of(const Graph* g, const Frame* from) const {
  for (const Frame* f = from; f; f = f->parent)
    if (f->graph == g) return f;
  return nullptr;
}

const Value& Interpreter::lookup(const Node* n, const Frame& frame) const {
  const Frame* f = frame_of(n->graph, &frame);
  if (!f)
    throw lang::InternalError("node of @" + (n->graph ? n->graph->name : std::string("?")) +
                              " used outside of its graph's activation (from @" +
                              frame.graph->name + ")");
  auto it = f->layout->live.slot.find(n);
  if (it == f->layout->live.slot.end() || f->state[it->second] == Frame::kPending)
    throw lang::InternalError("node of @" + f->graph->name + " used before it is computed");
  if (f->state[it->second] == Frame::kReleased)
    throw lang::InternalError("node of @" + f->graph->name + " used after its last use");
  return f->slots[it->second];
}

Value Interpreter::run_graph(const Graph* g, std::vector<Value>& args, const Frame* parent) {
  if (g->parent && !parent)
    throw lang::InternalError("@" + g->name + " runs outside of an activation of its parent @" +
                              g->parent->name);
  const Layout& l = layout(g);
  const Liveness& live = l.live;
  Frame frame{g, parent, &l, std::vector<Value>(l.size), std::vector<uint8_t>(l.size, Frame::kPending)};
  for (size_t i = 0; i < g->params.size(); ++i) {
    frame.slots[i] = std::move(args[i]);
    frame.state[i] = Frame::kLive;
  }
  for (size_t s : live.release_at_start) frame.release(s);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Node* n = g->nodes[i];
    const size_t slot = g->params.size() + i;
    check_interrupt(n->loc);
    if (!trace_) {
      frame.slots[slot] = eval_node(n, frame, i);
    } else {
      auto start = std::chrono::steady_clock::now();
      frame.slots[slot] = eval_node(n, frame, i);
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      trace_(TraceEvent{n, &frame.slots[slot], took.count(), depth_ - 1});
    }
    frame.state[slot] = Frame::kLive;
    // Values whose last use this was die now (liveness.h).
    for (size_t s : live.release_after[i]) frame.release(s);
  }
  if (!g->output) return Value::tuple({});
  if (g->output->graph == g) {  // the frame ends: hand the value over
    auto it = live.slot.find(g->output);
    if (it != live.slot.end() && frame.state[it->second] == Frame::kLive)
      return std::move(frame.slots[it->second]);
  }
  return lookup(g->output, frame);
}

Value Interpreter::call_graph(const Node* site, std::vector<Value>& args, const Frame& frame) {
  DepthGuard guard(depth_);
  if (depth_ > max_depth_)
    throw RuntimeError("recursion too deep (limit " + std::to_string(max_depth_) + ")", site->loc);
  const Frame* env = frame_of(site->callee->parent, &frame);
  if (stack_left() >= kStackReserve) return run_graph(site->callee, args, env);

  // Out of stack on this thread: continue on a fresh one.
  if (stack_used_ + kHopStack > stack_budget_)
    throw RuntimeError(
        "recursion too deep (limit " + std::to_string(depth_ - 1) + ": out of stack)", site->loc);
  stack_used_ += kHopStack;
  struct Hop {
    Interpreter* self;
    const Graph* graph;
    std::vector<Value>* args;
    const Frame* env;
    Value result;
    std::exception_ptr error;
  } hop{this, site->callee, &args, env, {}, nullptr};
  auto body = [](void* p) -> void* {
    auto* h = static_cast<Hop*>(p);
    try {
      h->result = h->self->run_graph(h->graph, *h->args, h->env);
    } catch (...) {
      h->error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kHopStack);
  pthread_t thread;
  int failed = pthread_create(&thread, &attr, body, &hop);
  pthread_attr_destroy(&attr);
  if (!failed) pthread_join(thread, nullptr);
  stack_used_ -= kHopStack;
  if (failed)
    throw RuntimeError(
        "recursion too deep (limit " + std::to_string(depth_ - 1) + ": cannot allocate more stack)",
        site->loc);
  if (hop.error) std::rethrow_exception(hop.error);
  return std::move(hop.result);
}

Value Interpreter::eval_node(const Node* n, Frame& frame, size_t pos) {
  if (n->is_constant()) {
    if (n->graph_value) {
      Value v;
      v.kind = Value::Kind::Opaque;
      v.opaque = std::make_shared<GraphRef>(n->graph_value);
      return v;
    }
    return n->value;
  }
  if (!n->is_apply())
    throw lang::InternalError("a parameter in the node list of @" + frame.graph->name);

  // Inputs at their last use are moved out of the frame: the kernel then holds the only
  // reference and may reuse the buffer for its result.
  const Liveness& live = frame.layout->live;
  const std::vector<bool>& moves = live.move_input[pos];
  std::vector<Value> in;
  in.reserve(n->inputs.size());
  for (size_t k = 0; k < n->inputs.size(); ++k) {
    if (moves[k]) {
      const size_t s = live.slot.at(n->inputs[k]);
      in.push_back(std::move(frame.slots[s]));
      frame.release(s);
    } else {
      in.push_back(lookup(n->inputs[k], frame));
    }
  }

  // The allocator's pool for what a kernel allocates (liveness.h, rule 6).
  const Lifetime lifetime = live.long_lived[live.num_params + pos] ? Lifetime::Long : Lifetime::Short;
  try {
    if (n->callee) {
      Value fused;
      const FusedKernelHook& hook = fused_kernel_hook();
      if (hook && n->callee->has_flag("fused")) {
        LifetimeScope hint(lifetime);
        if (hook(*n->callee, in, fused)) return fused;
      }
      if (const CallHook& call = call_hook(); call && !n->callee->parent) {
        Value result;
        if (call(*n->callee, in, result,
                 [&](std::vector<Value>& args) { return call_graph(n, args, frame); }))
          return result;
      }
      return call_graph(n, in, frame);
    }
    if (!n->prim) throw lang::InternalError("an apply with neither primitive nor callee");
    if (is_control_flow(*n)) return eval_control(n, in, frame);
    if (!n->prim->eval)
      throw lang::InternalError("primitive " + n->prim->name + " has no reference kernel");
    LifetimeScope hint(lifetime);
    if (const PrimitiveHook& hook = primitive_hook()) {
      Value result;
      if (hook(*n, in, result)) return result;
    }
    return kernel_for(*n->prim)(in, n->attrs);
  } catch (RuntimeError& e) {
    if (!e.loc.valid())
      e.loc = n->loc;  // generated code: blame the nearest located node
    else if (n->callee && n->loc.valid())
      e.call_stack.push_back(n->loc);
    throw;
  } catch (const lang::UserError& e) {
    throw RuntimeError(e.what(), n->loc);
  }
}

Value Interpreter::run_nested(const Graph* body, std::vector<Value> args, const Frame& frame) {
  if (args.size() != body->params.size())
    throw lang::InternalError("@" + body->name + " takes " + std::to_string(body->params.size()) +
                              " arguments, got " + std::to_string(args.size()));
  const Frame* env = body->parent ? frame_of(body->parent, &frame) : nullptr;
  if (body->parent && !env)
    throw lang::InternalError("@" + body->name + " used outside of its parent @" +
                              body->parent->name);
  return run_graph(body, args, env);
}

Value Interpreter::eval_control(const Node* n, std::vector<Value>& in, const Frame& frame) {
  const std::string& op = n->prim->name;
  auto need = [&](size_t count) {
    if (in.size() < count)
      throw lang::InternalError(op + " needs at least " + std::to_string(count) + " operands");
  };

  if (op == "if") {
    need(3);
    const size_t chosen = truthy(host_value(in[0]), n) ? 1 : 2;
    return run_nested(graph_operand(in[chosen], n, chosen), {}, frame);
  }

  if (op == "while") {
    need(2);
    const Graph* cond = graph_operand(in[0], n, 0);
    const Graph* body = graph_operand(in[1], n, 1);
    std::vector<Value> state(std::make_move_iterator(in.begin() + 2), std::make_move_iterator(in.end()));
    // The body takes the state by move: the previous state dies as the next one is made.
    Value go;
    while (truthy(host_value(go = run_nested(cond, state, frame)), n)) {
      const size_t k = state.size();
      state = loop_state(run_nested(body, std::move(state), frame), body, k);
    }
    return Value::tuple(std::move(state));
  }

  if (op == "for_range") {
    need(4);
    const int64_t start = to_int(host_value(in[0]), n, "start");
    const int64_t stop = to_int(host_value(in[1]), n, "stop");
    const int64_t step = to_int(host_value(in[2]), n, "step");
    if (step == 0) throw lang::UserError("for_range step must not be zero");
    const DType index_dtype = in[0].tensor.dtype() == DType::i32 ? DType::i32 : DType::i64;
    const Graph* body = graph_operand(in[3], n, 3);
    std::vector<Value> state(std::make_move_iterator(in.begin() + 4), std::make_move_iterator(in.end()));
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      // The index has the integer dtype of start (ir.h: i32 or i64).
      Tensor index = Tensor::empty(index_dtype, {});
      if (index_dtype == DType::i32)
        index.data<int32_t>()[0] = static_cast<int32_t>(i);
      else
        index.data<int64_t>()[0] = i;
      std::vector<Value> args;
      args.reserve(state.size() + 1);
      args.emplace_back(std::move(index));
      for (Value& s : state) args.push_back(std::move(s));
      state = loop_state(run_nested(body, std::move(args), frame), body, state.size());
      // The step past the last index may leave int64 (range(0, 2**63 - 1, 2**62)): the
      // loop is over then too.
      if (__builtin_add_overflow(i, step, &i)) break;
    }
    return Value::tuple(std::move(state));
  }

  if (op == "for_each") {
    need(2);
    auto* iter = dynamic_cast<Iterable*>(in[0].opaque.get());
    if (in[0].kind != Value::Kind::Opaque || !iter)
      throw lang::InternalError("for_each: operand 0 is not an iterable");
    const Graph* body = graph_operand(in[1], n, 1);
    std::vector<Value> state(std::make_move_iterator(in.begin() + 2), std::make_move_iterator(in.end()));
    // Part k of an iterator with several element types (iterable.h): part 0 starts the walk,
    // later parts continue it.
    const int64_t part = n->attrs.has("part") ? n->attrs.get_int("part") : 0;
    if (part == 0) iter->reset();
    Value element;
    while (iter->next_in(part, element)) {
      std::vector<Value> args;
      args.reserve(state.size() + 1);
      args.push_back(std::move(element));
      for (Value& s : state) args.push_back(std::move(s));
      state = loop_state(run_nested(body, std::move(args), frame), body, state.size());
      element = Value();
    }
    return Value::tuple(std::move(state));
  }

  throw lang::InternalError("unknown control-flow primitive " + op);
}

}  // namespace spora::sem
