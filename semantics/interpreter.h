// The reference interpreter: runs a Module node by node. It is the
// semantic oracle every backend, pass and transform is compared against, so it is plain and
// does no optimisation.
//
// Execution model
//   - A call of graph G creates a Frame: one slot per parameter and node of G, plus a pointer to
//     the frame of G's lexical parent. Nodes run in list order; an input is looked up in the
//     frame of the graph that owns it, found by walking the parent chain (closures).
//   - Apply of a primitive: prim->eval(input values, attrs). Apply with a callee graph: a
//     recursive call; the callee's parent frame is the innermost active frame of callee->parent.
//   - Structured control flow (ir.h) is run here, not by a kernel:
//       if(c, @then, @else)                  runs one zero-parameter branch, returns its value
//       while(@cond, @body, s...)            cond(s...) -> bool; body(s...) -> (s'...); result
//       (s...) for_range(start, stop, step, @body, s...)   body(i, s...) -> (s'...); result (s...),
//                                            i a scalar of start's dtype (i32 or i64)
//       for_each(iter, @body, s...)          iter is an Iterable (semantics/iterable.h)
//     Bodies run with the current frame chain as their environment.
//   - Memory (semantics/liveness.h, computed once per graph): a value is released right after
//     its last use (a value a nested body reads stays until the node running the body has
//     finished; the graph's output stays), and handed to its last user by move, so a kernel
//     may reuse a uniquely held input buffer. Loop state is moved into each iteration: the
//     previous state dies as the next is produced. Kernels allocate under the allocator's
//     long-lived pool hint for values that outlive a loop or are a loop's next state.
//   - A graph constant evaluates to an opaque GraphRef (it only names the graph; the
//     environment is always the active frame of the graph's parent).
//
// Errors: a lang::UserError from a kernel or a shape rule is rethrown as RuntimeError with the
// node's source location (the innermost node that has one) and the chain of call sites, so the
// driver prints `file:line:col: error: ...` with a caret. Bugs (malformed IR) are
// lang::InternalError. Recursion deeper than max_depth calls is a RuntimeError
// "recursion too deep (limit N)".
//
// Deep recursion: when a call finds the thread's stack nearly used up, it continues on a fresh
// thread with a 64 MiB stack (the caller waits), so depth is bounded by max_depth, not by the
// 8 MiB main stack; these extra stacks total at most stack_budget bytes (then the error says
// "out of stack"). Stack pages are only committed when touched.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/ir/ir.h"
#include "semantics/value.h"

namespace spora::sem {

// A user error raised while running, located at the IR node that failed.
struct RuntimeError : lang::UserError {
  RuntimeError(const std::string& message, lang::SourceLoc where,
               std::vector<lang::SourceLoc> calls = {})
      : lang::UserError(message), loc(where), call_stack(std::move(calls)) {}
  lang::SourceLoc loc;                      // the failing node (or the nearest located caller)
  std::vector<lang::SourceLoc> call_stack;  // call sites, innermost first ("called from" notes)
};

// A cooperative interrupt (`spora repl` on a terminal, the Jupyter kernel): request_interrupt()
// is async-signal-safe (a SIGINT handler calls it); the eager executor and the interpreter check
// the request before each op they run, and the lowering before each statement, and throw
// RuntimeError("interrupted") located there, so the cell stops between two ops and the session
// stays usable. clear_interrupt() before a
// cell drops a request that came while nothing ran.
void request_interrupt();
void clear_interrupt();
bool interrupt_requested();
// Throws the RuntimeError of an interrupt at `where` when one is requested (and clears it).
void check_interrupt(lang::SourceLoc where);

// The value of a graph constant: names a graph of the running module.
struct GraphRef : Opaque {
  explicit GraphRef(const ir::Graph* g) : graph(g) {}
  const ir::Graph* graph;
  std::string describe() const override { return "<graph @" + graph->name + ">"; }
};

// One executed node, for the trace hook. `seconds` is the node's wall time (for a call or a
// loop, including everything it ran); depth is the call depth (0 = the graph given to call()).
struct TraceEvent {
  const ir::Node* node;
  const Value* result;
  double seconds;
  int depth;
};
using TraceHook = std::function<void(const TraceEvent&)>;

// Runs a call of a fusion group (a graph flagged "fused", semantics/passes/fusion.h) with a
// compiled kernel: true with `result` set, or false to run the group's nodes one by one.
// backends/codegen installs it (process-wide); without one every group runs node by node.
using FusedKernelHook =
    std::function<bool(const ir::Graph& group, const std::vector<Value>& args, Value& result)>;
void set_fused_kernel_hook(FusedKernelHook hook);

// Runs a call of a top-level graph (not a fusion group) another way: true with `result` set,
// or false to run it as usual. `run` runs the call as usual (the hook may call it, once).
// backends/cuda installs it to capture and replay CUDA graphs (process-wide; none by default).
using CallHook =
    std::function<bool(const ir::Graph& callee, std::vector<Value>& args, Value& result,
                       const std::function<Value(std::vector<Value>&)>& run)>;
void set_call_hook(CallHook hook);

// Runs an application of a primitive (not control flow, not a graph call) another way: true
// with `result` set, or false to run its kernel. The distributed runtime installs it
// (backends/distributed/spmd_runtime.h): every rank runs the program on its shards of the
// values, with collectives where a primitive needs other shards (process-wide; none by default).
using PrimitiveHook =
    std::function<bool(const ir::Node& node, std::vector<Value>& in, Value& result)>;
void set_primitive_hook(PrimitiveHook hook);
// Makes a value whole on this rank before the interpreter reads it itself: the condition of
// `if` and `while`, the bounds of `for_range` (installed with the primitive hook).
using HostValueHook = std::function<void(Value& v)>;
void set_host_value_hook(HostValueHook hook);
// The fused-kernel hook installed now (empty if none), so that another may wrap it.
FusedKernelHook current_fused_kernel_hook();
// An application of a primitive as the interpreter runs one: through the primitive hook when
// one is installed, else its kernel. A fused kernel runs its anchor (a matmul, say) this way.
Value apply_primitive(const ir::Node& n, std::vector<Value> in);
// v as the host reads it (through the host-value hook when one is installed): a fused kernel
// reads its anchor's result this way.
void to_host_value(Value& v);

class Interpreter {
 public:
  explicit Interpreter(const ir::Module& module);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs g with the given arguments (one per parameter). g must be a top-level graph, or a
  // nested graph that uses no free variables. Throws RuntimeError on user errors.
  Value call(const ir::Graph* g, std::vector<Value> args);
  // Runs the module's entry graph (main); InternalError if there is none.
  Value run_entry(std::vector<Value> args = {});

  // Called after every node (including nodes of nested calls); empty to disable.
  void set_trace(TraceHook hook) { trace_ = std::move(hook); }
  // The most nested graph calls allowed (loop iterations do not count).
  void set_max_depth(int depth) { max_depth_ = depth; }
  int max_depth() const { return max_depth_; }
  // Total bytes of extra stack deep recursion may use (default 1 GiB; 0: the caller's only).
  void set_stack_budget(size_t bytes) { stack_budget_ = bytes; }

  const ir::Module& module() const { return module_; }

 private:
  struct Frame;
  struct Layout;

  Value run_graph(const ir::Graph* g, std::vector<Value>& args, const Frame* parent);
  Value eval_node(const ir::Node* n, Frame& frame, size_t pos);
  Value eval_control(const ir::Node* n, std::vector<Value>& in, const Frame& frame);
  Value run_nested(const ir::Graph* body, std::vector<Value> args, const Frame& frame);
  const Value& lookup(const ir::Node* n, const Frame& frame) const;
  const Frame* frame_of(const ir::Graph* g, const Frame* from) const;
  const Layout& layout(const ir::Graph* g);
  Value call_graph(const ir::Node* site, std::vector<Value>& args, const Frame& frame);

  const ir::Module& module_;
  std::unordered_map<const ir::Graph*, std::unique_ptr<Layout>> layouts_;
  TraceHook trace_;
  int max_depth_ = 10000;
  int depth_ = 0;
  size_t stack_budget_ = size_t{1} << 30;
  size_t stack_used_ = 0;  // extra stack bytes currently in use
};

}  // namespace spora::sem
