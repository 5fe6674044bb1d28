// The kernel IR: the loop nest of one fusion group as typed data (no target syntax). Fusion
// planning (semantics/passes/fusion_plan.h) builds it; backends/codegen prints it as C++ or
// CUDA. See README.md of this folder.
//
// A kernel is one fixed loop-nest template:
//
//   totals = init                                       // whole-kernel reductions
//   for r in [0, rows):                                 // row loop (parallel)
//     row_setup                                         // coordinates decoded from r
//     per pass: pre; accumulators = init
//               for j in [0, inner):                    // inner loop (or inner_nest)
//                 inner_setup; body; accumulators op= value
//               post                                    // reads the accumulators (Reduced)
//               totals op= value (post_totals)
//   epilogue                                            // reads the totals
//
// Values are SSA: every Define names a value (v<id>) of one dtype, and an operand is a value
// or a typed literal. Index expressions (Ix) are quasi-affine integer expressions of the loop
// variables and decoded coordinates (sums, multiplication by constants, floor division and
// remainder by positive constants), compared structurally. The inner loop carries its vector
// width and its interleave factor; transformations (transform.h) set them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "semantics/types.h"

namespace spora::kir {

using sem::Shape;

// ---- index expressions -------------------------------------------------------------------

// A loop variable (r, j) or a coordinate of the domain decoded from one (c<axis>).
struct Var {
  enum class Kind : uint8_t { Row, Inner, Coord };
  Kind kind = Kind::Inner;
  int axis = -1;       // Coord: the domain axis
  bool inner = false;  // Coord: decoded from the inner index j
  int copy = 0;        // 0, or the copy of an interleaved body (1, 2, ...)
  bool operator==(const Var&) const = default;
  bool depends_inner() const { return kind == Kind::Inner || (kind == Kind::Coord && inner); }
  static Var row() { return {Kind::Row, -1, false, 0}; }
  static Var inner_index() { return {Kind::Inner, -1, true, 0}; }
  static Var coord(int axis, bool inner) { return {Kind::Coord, axis, inner, 0}; }
};

// A quasi-affine integer expression. Immutable, shared; == compares structure (the order of a
// sum's terms included).
class Ix {
 public:
  enum class Op : uint8_t { Const, Var, Sum, Scale, Div, Mod };

  Ix();  // the constant 0
  static Ix constant(int64_t k);
  static Ix var(Var v);
  static Ix sum(std::vector<Ix> terms);  // at least two terms
  static Ix scale(Ix x, int64_t k);      // x * k
  static Ix div(Ix x, int64_t k);        // floor(x / k), k > 0
  static Ix mod(Ix x, int64_t k);        // x mod k, k > 0

  Op op() const;
  int64_t k() const;                   // Const: the value; Scale, Div, Mod: the constant
  const Var& v() const;                // Var
  const std::vector<Ix>& args() const; // Sum: the terms; Scale, Div, Mod: the one operand
  bool is_const(int64_t k) const { return op() == Op::Const && this->k() == k; }
  bool depends_inner() const;
  bool uses(Var::Kind kind) const;
  // The same expression with every variable that depends on the inner loop (j and inner
  // coordinates) given copy `copy`.
  Ix with_inner_copy(int copy) const;

  bool operator==(const Ix& o) const;
  bool operator!=(const Ix& o) const { return !(*this == o); }
  size_t hash() const;

 private:
  struct Node;
  std::shared_ptr<const Node> n_;
  explicit Ix(std::shared_ptr<const Node> n) : n_(std::move(n)) {}
  static Ix with_constant(Op op, Ix x, int64_t k);  // scale, div or mod of x by k
};

struct IxHash {
  size_t operator()(const Ix& x) const { return x.hash(); }
};

// ---- values, expressions, statements ------------------------------------------------------

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, All, Any };
const char* reduce_op_name(ReduceOp op);

// A value (v<id>) or a literal; dtype is the value's.
struct Operand {
  enum class Kind : uint8_t { Value, Literal };
  Kind kind = Kind::Literal;
  int id = -1;     // Value
  int copy = 0;    // Value: the copy of an interleaved body
  double lit = 0;  // Literal
  DType dtype = DType::f32;
  static Operand value(int id, DType d) { return {Kind::Value, id, 0, 0, d}; }
  static Operand literal(double v, DType d) { return {Kind::Literal, -1, 0, v, d}; }
  bool is_value() const { return kind == Kind::Value; }
  bool operator==(const Operand& o) const;  // literals by bits (-0 differs from 0)
};

// The elementwise primitives a kernel computes (one table: arity and operand kind).
struct ElementwiseFn {
  const char* name;
  int arity;     // 1 or 2
  bool real;     // operands and result f32/f64 (else compare: any operands, bool result)
};
// The built-in ones (neg, exp, tanh, ...; add, sub, ..., maximum), then the primitives whose
// registry row has a loop_form facet (below).
const ElementwiseFn* unary_fn(const std::string& name);
const ElementwiseFn* binary_fn(const std::string& name);
const ElementwiseFn* compare_fn(const std::string& name);  // eq, ne, lt, le, gt, ge

// A primitive row's `loop_form` facet: its arity (1 or 2), saying that the real elementwise
// primitive may be called inside a fused loop; each target says how to write it in a facet
// of its own (backends/codegen/loop_expr.h: one C expression per dtype). The built-in
// primitives have hand-written and vector forms in the printers instead.
inline constexpr const char* kLoopFormFacet = "loop_form";
// The arity of the loop_form facet of the primitive `name` (0: none, or a built-in).
int loop_form(const std::string& name);
// The primitives with a loop_form facet that a kernel's expressions call, sorted.
std::vector<std::string> loop_form_calls(const struct Kernel& k);

struct Expr {
  enum class Op : uint8_t {
    Load,        // buffer[index] of input `buffer`
    Unary,       // fn(a): real
    Binary,      // fn(a, b): real
    Compare,     // fn(a, b): bool
    And, Or,     // bool, bool -> bool
    Not,         // bool -> bool
    Select,      // a ? b : c
    Cast,        // a converted to dtype (to bool: a != 0)
    FiniteOrZero,  // a if finite, else 0
    ClassMatch,  // int64(a) == index ? 1 : 0, in dtype (one_hot)
    Dropout,     // a * scale if uniform(seed, index) >= p, else 0
    Reduced,     // the value of accumulator `acc` after its loop (mean: / count)
  };
  Op op = Op::Load;
  DType dtype = DType::f32;
  std::string fn;             // Unary, Binary, Compare: the primitive's name
  std::vector<Operand> args;
  int buffer = -1;            // Load: the input
  Ix index;                   // Load, Dropout: the element; ClassMatch: the class coordinate
  double p = 0, scale = 1;    // Dropout
  uint64_t seed = 0;          // Dropout
  int acc = -1;               // Reduced: the accumulator's id (row) or total index
  bool total = false;         // Reduced: acc is a total
  ReduceOp red = ReduceOp::Sum;  // Reduced
  bool mean = false;          // Reduced
  int64_t count = 1;          // Reduced with mean: the divisor
};

struct Stmt {
  enum class Kind : uint8_t {
    Define,  // v<id> = expr
    Coord,   // coordinate `coord` = index
    Store,   // out<buffer>[index] = value
    Check,   // fails the kernel when int64(value) is outside [0, limit)
  };
  Kind kind = Kind::Define;
  int id = -1;       // Define
  int copy = 0;      // Define: the copy of an interleaved body
  Expr expr;         // Define
  Var coord;         // Coord
  Ix index;          // Coord, Store
  int buffer = -1;   // Store: the output
  Operand value;     // Store, Check
  int64_t limit = 0; // Check
};

// Builders of statements.
Stmt define(int id, Expr e);
Stmt coord(Var c, Ix index);
Stmt store(int buffer, Ix index, Operand value);
Stmt check(Operand value, int64_t limit);
Expr load(int buffer, DType d, Ix index);
Expr unary(const std::string& fn, Operand a);
Expr binary(const std::string& fn, DType d, Operand a, Operand b);
Expr compare(const std::string& fn, Operand a, Operand b);

// ---- the kernel ---------------------------------------------------------------------------

// An input or output: contiguous row-major.
struct Buffer {
  DType dtype = DType::f32;
  Shape shape;
  int64_t numel() const;
};

// An accumulator: a row accumulator (a<id>) lives in one pass of one row; a total (t<k>)
// spans the whole nest. Floats accumulate in f64 (sum, prod) or their own dtype (max, min);
// all/any in i32 (0 or 1). Max and min are nan when any element is nan.
struct Accumulator {
  int id = -1;  // row: a<id>; total: its index t<k>
  bool total = false;
  ReduceOp op = ReduceOp::Sum;
  DType dtype = DType::f64;
  Operand value;  // what is accumulated (a value of the body, or of the row)
};

// The inner loop of a pass: its vector width (lanes per iteration a printer writes
// explicitly; 1: scalar statements, the target compiler vectorises) and interleave factor.
// interleave > 1: `interleaved` holds the inner setup and body once per copy (statement k of
// copy c follows statement k of copy c - 1), over interleave equal parts of the row; the
// remainder runs the plain body.
struct InnerLoop {
  int vector_width = 1;
  int interleave = 1;
  std::vector<Stmt> interleaved;
};

struct Pass {
  std::vector<Stmt> pre;         // row statements before the inner loop
  std::vector<Stmt> body;        // one element of the inner loop
  std::vector<Accumulator> accs; // row accumulators updated at the end of the body
  std::vector<Stmt> post;        // row statements after the inner loop
  std::vector<size_t> body_totals;  // totals (indices) updated at the end of the body
  std::vector<size_t> post_totals;  // totals updated at the end of post
  InnerLoop loop;
  bool has_inner_loop() const { return !body.empty() || !accs.empty() || !body_totals.empty(); }
};

struct Kernel {
  std::vector<Buffer> inputs;   // in0, in1, ...: the group's inputs, then the anchor's result
  std::vector<Buffer> outputs;  // out0, out1, ...
  Shape domain;                 // the iteration domain
  int64_t rows = 1;             // outer iterations (r)
  int64_t inner = 1;            // inner iterations (j)
  bool splittable = false;      // no row reductions: the inner loop may be split into tiles
  int64_t tile = 0;             // inner iterations per task (0: the whole row; transform.h)
  std::vector<Stmt> row_setup;    // Coord statements of r
  std::vector<Stmt> inner_setup;  // Coord statements of j (every pass)
  // Row reductions over several axes: the inner coordinates as nested loops, outermost first,
  // and j as their expression. Empty: one loop over j.
  std::vector<std::pair<Var, int64_t>> inner_nest;
  Ix inner_index;
  std::vector<Pass> passes;       // reduction passes, then the final pass (never empty)
  std::vector<Accumulator> totals;
  std::vector<Stmt> epilogue;     // after the nest: scalar outputs from the totals
  bool checks = false;            // some statement is a Check
  int anchor = -1;  // the output-fusable anchor's node index in the group, or -1 (last input)
  // Per input: every read is at the domain's own flat index and the input has the domain's
  // element count (an output of the same size and dtype may overwrite it in place).
  std::vector<bool> in_place_ok;
  std::string describe;           // one line: domain, passes, totals
};

// The IR as text (one statement a line; `spora ir --stage kernels`).
std::string print(const Kernel& k);
std::string print(const Ix& x);
std::string print(const Operand& o);

// Checks the kernel: operand and result dtypes of every expression, every value defined
// before it is used and in a scope that reaches the use (row values are not read by an
// earlier pass, body values not outside their loop, the epilogue reads only totals), every
// index built from the variables in scope, divisors positive, and every load and store index
// inside its buffer for all values of the loop variables. Returns the problems, one a line
// (empty: none).
std::string verify(const Kernel& k);

}  // namespace spora::kir
