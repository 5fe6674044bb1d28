// The lowering engine (internal to semantics/). See semantics/lower.h for the algorithm.
// Split over files: lowerer.cpp (driver, functions, specialisation), expr.cpp (expressions,
// operators), stmt.cpp (statements and control flow), call.cpp (primitive binding, models,
// built-ins), aval.cpp (abstract values).
#pragma once

#include <functional>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "semantics/eager.h"
#include "semantics/lower.h"
#include "semantics/lower/aval.h"
#include "semantics/restore.h"

namespace spora::sem::lower {

// Thrown after a diagnostic has been reported, to abandon the current statement.
struct Abort {};

// The names an AST fragment refers to (transforms.cpp): recursion detection and the
// variables a lambda captures.
void collect_names(const lang::Expr* e, std::set<std::string>& out);
void collect_names(const lang::Block* b, std::set<std::string>& out);
void collect_names(const lang::Stmt* s, std::set<std::string>& out);

// Thrown by a call of a recursive function whose result type is still being inferred (no
// declared return type; lowerer.cpp): a conditional with a run-time condition catches it in
// one branch and takes the other, the base case, as its value; `call` is the call's range and
// `spec` the function's specialisation being inferred.
struct RecursionPending {
  lang::SourceRange call;
  const void* spec = nullptr;
};

// The result of lowering a statement list: either it returned (value set) or fell through.
struct Flow {
  bool returned = false;
  AV value;
  lang::SourceRange range;  // of the return statement
};

// A positional or keyword argument after evaluation.
struct Arg {
  std::string keyword;  // "" when positional
  AV value;
  lang::SourceRange range;
};

class Lowerer {
 public:
  Lowerer(const Program& program, lang::DiagnosticEngine& diags, ir::Module& module, const LowerOptions& options = {});
  // Lowers the entry function into a graph; false on errors.
  bool lower_entry(const std::string& entry, bool eager = false);
  // Type-checks every function whose parameters are all annotated with concrete types.
  void check_annotated_functions();

  // ---- diagnostics
  [[noreturn]] void fail(lang::SourceRange r, const std::string& message);
  void error(lang::SourceRange r, const std::string& message);
  lang::SourceLoc loc(lang::SourceRange r) const { return r.begin; }
  // The graph nodes go to now. A module-level let is evaluated outside any graph: whatever
  // would emit a node there is an error at r (it must fold to a compile-time constant).
  ir::Graph* current_graph(lang::SourceRange r);

  // ---- globals
  const Binding* lookup_global(int module, const std::string& name) const;
  // "unknown name 'sumx' (did you mean 'sum'?)": the error for a name nothing binds, with the
  // nearest visible name (a typo) or Spora's word for a Python one (True, False, None).
  std::string unknown_name(const Env& env, const std::string& name) const;
  // Every name visible from env: its scopes, its module's globals, the built-ins and the
  // callable primitives (repeats possible).
  void for_each_visible_name(const Env& env, const std::function<void(const std::string&)>& f) const;
  // A module's functions and models, its imports and its constants (the constructor does all
  // modules; a session adds appended modules and its cells' declarations; `replace`: a later
  // definition replaces an earlier one instead of being an error).
  void declare_module(size_t m);
  void declare_function(size_t m, const lang::FuncDef& f, bool replace);
  void declare_model(size_t m, const lang::ModelDef& md, bool replace);
  void declare_global(size_t m, const std::string& name, AV v, lang::SourceRange r, bool replace);
  void bind_import(size_t m, const lang::Import& imp);
  void evaluate_constants(size_t m);

  // ---- an eager session (session.cpp): one entry graph run op by op, whose variables persist
  // from cell to cell.
  void begin_session();
  // Runs a cell's statements (the body of `cell`) in the session; with `echo`, a cell that is
  // one expression prints its value unless it is none. False after compile errors (reported).
  bool run_cell(const lang::FuncDef& cell, bool echo);
  // Evaluates an expression in the session (null after errors) and the graph its nodes go to.
  AV eval_in_session(const lang::Expr& e);
  // The names visible to the session's next cell that start with `prefix`, sorted, once each.
  std::vector<std::string> session_names(const std::string& prefix) const;
  ir::Graph* session_graph() const { return graph_; }

  // ---- expressions (expr.cpp)
  AV eval(const lang::Expr& e, Env& env);
  AV eval_binary(lang::BinaryOp op, AV lhs, AV rhs, lang::SourceRange r);
  AV eval_unary(lang::UnaryOp op, AV v, lang::SourceRange r);
  AV eval_index(AV obj, const std::vector<lang::IndexItem>& items, Env& env, lang::SourceRange r);
  AV eval_attribute(AV obj, const std::string& name, lang::SourceRange r);
  AV eval_list(const lang::Expr& e, Env& env);
  AV eval_conditional(const lang::Expr& e, Env& env);
  // Reports that `construct` (an if, a conditional expression) with a run-time condition
  // gives a function value in one of its branches (`results`), naming the functions and
  // pointing at where they are written.
  [[noreturn]] void fail_run_time_function(lang::SourceRange r, const std::string& construct,
                                           const AV (&results)[2]);

  // ---- function values chosen at run time (closures.cpp)
  // The join of two branches' values: their common skeleton, in which two different functions
  // become a union (AK::Union) of both sides' candidates; null when the values cannot meet
  // (f32[2] and f32[3], a tuple and a tensor, a function and a tensor).
  AV join_values(const AV& a, const AV& b, lang::SourceRange r);
  // v, a branch's value (in the current graph), in the shape of its join `skel`: a function
  // becomes its tag and captured values, the other candidates' captures placeholders.
  AV inject(const AV& v, const AV& skel, lang::SourceRange r);
  // Brings the values of two branch graphs to their join, each in its graph; false when they
  // cannot meet (the caller reports it).
  bool merge_branches(AV (&results)[2], ir::Graph* (&branches)[2], lang::SourceRange r);
  // A call of a function chosen at run time: a switch (nested ifs on the tag) over the calls
  // of its candidates.
  AV call_union(const AVal& u, std::vector<Arg> args, lang::SourceRange r);
  // The run-time values a function value captures (through closures' environments, bound
  // receivers, transforms and unions), in a fixed order; map_captures rebuilds it with others.
  void collect_captures(const AV& v, std::vector<ir::Node*>& out) const;
  AV map_captures(const AV& v, const std::vector<ir::Node*>& nodes, size_t& pos) const;
  // A value of type t standing for the captures of a candidate that was not chosen.
  ir::Node* placeholder(const TypeP& t, lang::SourceRange r);

  // ---- calls (call.cpp)
  AV call(AV callee, std::vector<Arg> args, lang::SourceRange r);
  AV call_primitive(const Primitive& prim, std::vector<Arg> args, lang::SourceRange r,
                    std::optional<DType> init_dtype = {}, const Shape* init_shape = nullptr,
                    std::optional<int64_t> init_seed = {});
  AV call_builtin(const std::string& name, std::vector<Arg> args, lang::SourceRange r);
  AV construct_model(const AVal& cls, std::vector<Arg> args, lang::SourceRange r);
  AV call_closure(const AVal& clo, std::vector<Arg> args, lang::SourceRange r);
  AV call_def(const AVal& fn, std::vector<Arg> args, lang::SourceRange r);
  AV call_def_body(const AVal& fn, std::vector<Arg> args, lang::SourceRange r);
  // Emits prim(inputs, attrs) after running its shape rule; shape errors point at r.
  AV emit(const std::string& prim, std::vector<ir::Node*> inputs, Attrs attrs, lang::SourceRange r);
  ir::Node* emit_node(const std::string& prim, std::vector<ir::Node*> inputs, Attrs attrs,
                      lang::SourceRange r);

  // ---- parallel annotations (annotate.cpp)
  // shard_hint(x) with `layout` (partition numbers or a tensor-map string) checked against x's
  // rank; errors at r say `what` ("shard", "shard= of matmul (input 2)").
  ir::Node* emit_shard_hint(ir::Node* x, const AV& layout, lang::SourceRange r,
                            const std::string& what);
  AV call_shard(std::vector<Arg> args, lang::SourceRange r);  // the builtin shard(x, layout)
  // A primitive's tensor inputs behind the shard_hints of its `shard=` argument.
  std::vector<ir::Node*> shard_inputs(const std::string& prim, std::vector<ir::Node*> inputs,
                                      const Arg& shard);
  // The k of a @stage(k) among the decorators (none: nullopt).
  std::optional<int64_t> stage_of(const std::vector<lang::Decorator>& decorators, int module);
  // v with every tensor (through tuples) behind stage_boundary(stage).
  AV enter_stage(const AV& v, int64_t stage, lang::SourceRange r);

  // ---- statements (stmt.cpp)
  Flow lower_block(const std::vector<lang::StmtPtr>& stmts, size_t from, Env& env);
  Flow lower_stmt_list_from(const std::vector<lang::StmtPtr>& stmts, size_t i, Env& env);
  void bind_pattern(const lang::Pattern& p, AV value, Env& env, bool declare, bool is_var,
                    lang::SourceRange value_range);
  Flow lower_if(const std::vector<lang::StmtPtr>& stmts, size_t i, Env& env);
  void lower_while(const lang::Stmt& s, Env& env);
  void lower_for(const lang::Stmt& s, Env& env);
  struct RangeBounds {
    ir::Node* start = nullptr;
    ir::Node* stop = nullptr;
    ir::Node* step = nullptr;
  };
  RangeBounds range_bounds(const lang::Expr& range_call, Env& env);
  bool lower_for_eager_iter(const lang::Stmt& s, const AV& iterable, Env& env);

  // ---- values <-> nodes (lowerer.cpp)
  // A run-time node for v; static numbers become constants of `dtype` (or their default).
  ir::Node* to_node(const AV& v, lang::SourceRange r, std::optional<DType> dtype = {});
  ir::Node* constant(Value v, lang::SourceRange r);
  // Flattens v into its run-time leaves (static numbers materialised when `materialise`).
  void flatten(const AV& v, std::vector<ir::Node*>& leaves, lang::SourceRange r, bool materialise);
  // Rebuilds a value of skeleton `skel` from leaves (consumed from `pos`).
  AV unflatten(const AV& skel, const std::vector<ir::Node*>& leaves, size_t& pos);
  // Materialises static numbers of v (for loop-carried state and branch results).
  AV materialise_numbers(const AV& v, lang::SourceRange r);
  // The values of a run-time choice's two branches as nodes, each in its branch's graph: a
  // number literal facing a float scalar in the other branch takes that scalar's dtype (as it
  // would in arithmetic with it), `1.0 if c else x` with x: f64 is an f64.
  void materialise_branches(AV (&results)[2], ir::Graph* const (&branches)[2], lang::SourceRange r);
  AV materialise_like(const AV& v, const AV& other, lang::SourceRange r);
  // Packs/unpacks one value into a single node (graph parameters and results).
  ir::Node* pack(const AV& v, lang::SourceRange r);
  AV unpack(const AV& skel, ir::Node* n, lang::SourceRange r);
  TypeP packed_type(const AV& v) const;

  // ---- types (lowerer.cpp)
  // Checks value v against an annotation, binding symbolic dims into `env`. `what` names the
  // value in messages ("argument 'x' of 'affine'").
  AV check_annotation(const AV& v, const lang::TypeExpr& t, Env& env, const std::string& what,
                      lang::SourceRange r);
  TypeP resolve_type(const lang::TypeExpr& t, Env& env);  // fully concrete tensor types
  int64_t eval_dim(const lang::Expr& e, Env& env, bool bind, int64_t actual);

  // ---- automatic differentiation and eager mode (transforms.cpp)
  AV make_transform(const std::string& kind, std::vector<Arg> args, lang::SourceRange r);
  AV call_transform(const AVal& t, std::vector<Arg> args, lang::SourceRange r);
  // jacfwd(f) / jacrev(f) (JAX's): the Jacobian of f's float tensor result with respect to its
  // wrt arguments (tensors or numbers), of shape result shape + argument shape; jacfwd by one
  // forward-mode pass per argument element, jacrev by one reverse-mode pass per result element.
  // hessian(f) is jacfwd(jacrev(f)).
  AV call_jacobian(const AVal& t, std::vector<Arg> args, lang::SourceRange r);
  AV jacobian_output(const AV& v, lang::SourceRange r);
  AV call_vjp(std::vector<Arg> args, lang::SourceRange r);
  AV call_pullback(const AVal& pb, std::vector<Arg> args, lang::SourceRange r);
  AV call_jvp(std::vector<Arg> args, lang::SourceRange r);
  // Differentiable copy of an argument: static numbers become f32 nodes and every float
  // tensor leaf a fresh identity node (appended to `leaves`), so each has its own adjoint.
  // `path` names the leaves' identity nodes after the fields they were read through
  // ("net.l1.w"; empty: unnamed): later layers (the training step, strategies) refer to them so.
  AV fresh_leaves(const AV& v, std::vector<ir::Node*>& leaves, lang::SourceRange r,
                  const std::string& path = "");
  // Rebuilds v's structure with `adj` (in leaf order) in place of its float tensor leaves.
  AV with_leaves(const AV& v, const std::vector<ir::Node*>& adj, size_t& pos);
  // In eager mode, a run-time scalar whose value is known becomes static (for control flow).
  AV known(const AV& v) const;
  bool is_recursive(const lang::FuncDef* def);
  // Lowers `decorated`'s bwd function for a @custom_grad graph and returns its graph.
  ir::Graph* custom_grad_graph(const lang::Decorator& d, int module, ir::Graph* fwd, lang::SourceRange r);

  // ---- state
  bool eager_ = false;        // every node runs as soon as it is emitted (module_.on_add)
  // Whether the nodes emitted now run as they are emitted: eager mode, emitting into the entry
  // graph. The graph of a @jit, @checkpoint or @custom_grad function is lowered like graph
  // mode's even in eager mode (its loops become loop nodes: their bounds are not known yet).
  bool op_by_op() const { return eager_ && graph_ == module_.entry; }
  bool x64_ = false;          // f32 means f64 (LowerOptions::x64)
  bool grad_check_ = false;   // emit derivative checks after each transform
  DType float_dtype() const { return x64_ ? DType::f64 : DType::f32; }
  DType widen(DType d) const { return x64_ && d == DType::f32 ? DType::f64 : d; }
  // Emits the numerical checks of one derivative (LowerOptions::grad_check).
  void emit_grad_checks(const AV& fn, const std::vector<Arg>& args, const std::vector<int64_t>& wrt,
                        const std::vector<AV>& primals, const std::vector<ir::Node*>& inputs,
                        const std::vector<ir::Node*>& region, ir::Node* out, const std::vector<ir::Node*>& adj,
                        lang::SourceRange r);
  // v with its float tensor leaves replaced by `nodes` (in leaf order), other leaves kept.
  AV replace_leaves(const AV& v, const std::vector<ir::Node*>& nodes, size_t& pos);
  std::unique_ptr<EagerExecutor> executor_;

  // ---- eager-mode memory (eager_memory.cpp)
  // Every lower_block in progress is a frame; at the end of each statement of the innermost
  // one, the nodes of the entry graph that nothing can reach any more are collected (see
  // EagerExecutor::collect). Roots: the bindings of every frame's environment (through tuples,
  // records, closures, bound methods, transforms and pullbacks), and the temporaries of the
  // statements in progress in the outer frames: the nodes each made since it started, apart
  // from those made inside its nested blocks of the same environment (loop iterations, which
  // bind what they keep), so a loop does not pin its past iterations.
  struct EagerFrame {
    const Env* env = nullptr;
    uint64_t entry = 0;                      // executor clock when the block started
    uint64_t stmt_start = 0;                 // ... when its current statement started
    uint64_t first_block = UINT64_MAX;       // ... when the statement's first nested block started
    uint64_t last_block_exit = UINT64_MAX;   // ... when its latest nested block ended
  };
  class EagerBlock {  // RAII: one frame while a lower_block runs (no-op outside eager mode)
   public:
    EagerBlock(Lowerer& lowerer, const Env& env);
    ~EagerBlock();
    EagerBlock(const EagerBlock&) = delete;
    EagerBlock& operator=(const EagerBlock&) = delete;
    void statement_start();
    void statement_end();  // collects when it may
   private:
    bool module_entry_is_current() const;
    Lowerer& L_;
    bool active_ = false;
    bool nested_block_ = false;  // same environment as the frame below
  };
  std::vector<EagerFrame> eager_frames_;
  uint64_t eager_collected_at_ = UINT64_MAX;  // executor clock at the last collection
  void eager_collect();
  // The nodes a vjp pullback (AK::Pullback) needs: its tape (`region`) and the rest.
  static void pullback_nodes(const AVal& pb, std::vector<ir::Node*>& region, std::vector<ir::Node*>& others,
                             std::vector<AV>& values);
  bool ad_inline_ = false;    // lowering a function being differentiated: inline def calls
  std::function<bool(const std::string&)> recompute_;  // LowerOptions::recompute
  bool materialize_models_ = false;                    // LowerOptions::materialize_models
  bool never_eager_ = false;                           // LowerOptions::never_eager
  Env session_env_;                                    // begin_session: the cells' variables
  std::function<void(lang::SourceRange, const std::string&)> on_name_;  // LowerOptions::on_name
  // env.declare, reported to on_name_.
  void declare(Env& env, const std::string& name, Binding b);
  void note_name(lang::SourceRange r, const AV& v) const {
    if (on_name_ && r.valid() && v) on_name_(r, type_text(v));
  }
  std::function<std::string(const std::string&)> set_device_;  // LowerOptions::set_device

  // ---- automatic mixed precision (amp.cpp, semantics/amp.h)
  std::optional<AmpPolicy> amp_override_;  // LowerOptions::amp (--amp): wins over set_amp
  AmpPolicy amp_;                          // the policy in force (set_amp or the override)
  int amp_depth_ = 0;                      // > 0: lowering a method of a model with parameters
  // Parses `set_amp("O1", bf16)` (a first statement of main); false after an error.
  bool lower_set_amp(const lang::Expr& call);
  bool in_amp() const { return amp_.on() && amp_depth_ > 0; }
  // Whether a method of this model is part of the network (the model or a sub-model field
  // declares a param).
  static bool model_has_params(const AV& self);
  // The inputs of `prim` with the casts the policy asks for (emitted before prim).
  std::vector<ir::Node*> amp_cast_inputs(const Primitive& prim, std::vector<ir::Node*> inputs,
                                         lang::SourceRange r);
  // v with its low-precision tensor leaves (through tuples and records) cast to f32.
  AV amp_outputs_to_f32(const AV& v, lang::SourceRange r);
  std::map<const lang::FuncDef*, bool> recursive_;
  std::function<const Value*(const ir::Node*)> eager_value;  // set in eager mode
  const Program& program_;
  lang::DiagnosticEngine& diags_;
  ir::Module& module_;
  ir::Graph* graph_ = nullptr;  // where nodes are emitted now
  std::vector<std::map<std::string, Binding>> globals_;  // per AST module
  struct Spec {
    ir::Graph* graph = nullptr;
    bool inline_instead = false;
    bool failed = false;    // lowering it reported errors: later calls are poisoned quietly
    bool in_progress = false;
    TypeP declared_result;  // for recursive calls
    AV inferred_result;     // for recursive calls without a declared return type: the result so far
    // A base case that is a number literal (`1.0 if n == 0 else x * f(x, n - 1)`): the first
    // pass of the fixed point gives the recursive calls that literal, which takes its type
    // from its use as any literal does (f64 beside an f64 x); that pass only finds the type.
    AV literal_base;
    bool probing = false;   // looking for the base case: recursive calls throw RecursionPending
    AV result_skeleton;
  };
  std::map<std::string, Spec> specs_;
  std::vector<std::string> spec_order_;  // the keys of specs_, in the order they were made
  // Drops the specs made after the first `mark` of spec_order_, with their graphs: those made
  // while a recursive function's result type was not known yet.
  void drop_specs_since(size_t mark);
  // Infers the result of recursive function `fname` from its base case: `lower` lowers the
  // body into a graph (s.graph, of the name it is given) and returns its result; that graph's recursive calls throw
  // RecursionPending, which a conditional with a base case in its other branch takes in place
  // of a value. Returns the base case's (materialised) result; reports an error without one.
  AV probe_base_case(Spec& s, const std::string& fname, const lang::FuncDef& def,
                     const std::function<Flow(const std::string&)>& lower);

  // ---- calling a def (lowerer.cpp). call_def_body binds the arguments (bind_def_call), decides
  // how to call (plan_def_call), then calls the def's specialised graph (call_def_graph; the first
  // call makes it, specialise_def) or inlines its body (inline_def).
  struct DefCall {
    const AVal* fn = nullptr;
    const lang::FuncDef* def = nullptr;
    std::string name;         // "f", or "Model.method" for a method
    lang::SourceRange range;  // of the call
    Env env;                  // the receiver's scope and the dims the annotations bound
    std::vector<AV> bound;    // each parameter's argument
    std::vector<lang::SourceRange> ranges;    // ... and where it was written
    const lang::Decorator* custom = nullptr;  // @custom_grad
    bool force_graph = false;  // @checkpoint, @custom_grad, @jit in eager mode, recompute
    bool recompute = false;    // LowerOptions::recompute makes it a @checkpoint graph
    bool inline_call = false;  // inlined at every call, with no graph of its own
    std::string key;           // its specialisation in specs_
  };
  DefCall bind_def_call(const AVal& fn, std::vector<Arg> args, lang::SourceRange r);
  // Declares the receiver's constructor arguments, fields, sibling methods and `self` in e.
  void bind_receiver(Env& e, const AV& self, int module);
  void plan_def_call(DefCall& c);
  Flow lower_def_body(const DefCall& c, Env& body_env);
  // v checked against the declared return type, if any.
  AV check_def_result(const DefCall& c, const AV& v, Env& body_env, lang::SourceRange r);
  // A call of the specialisation s, made earlier (or in progress: a recursive call).
  AV call_def_graph(const DefCall& c, Spec& s);
  // Makes the specialisation of c and calls it; nullopt when the def is to be inlined instead
  // (its result is static or a function).
  std::optional<AV> specialise_def(const DefCall& c);
  // Lowers c's body into a new graph g named `name` (s.graph), whose parameters are the run-time
  // arguments (xs: the values passed for them, packed in `caller`); returns the body's checked
  // flow. Nodes go to g from then on: the caller restores graph_.
  Flow lower_def_graph(const DefCall& c, Spec& s, const std::string& name, ir::Graph* caller,
                       ir::Graph*& g, std::vector<ir::Node*>& xs);
  AV inline_def(const DefCall& c);
  int inline_depth_ = 0;
  int spec_depth_ = 0;  // specialise_def calls in progress (nested)
  static constexpr int kMaxSpecialisationDepth = 200;
  // How deeply functions may inline into each other: eager mode runs recursion by inlining.
  int max_inline_depth() const { return op_by_op() ? 1000 : 64; }
  std::vector<std::string> inline_stack_;
  int64_t model_counter_ = 0;
};

}  // namespace spora::sem::lower
