// The kernel IR (kernel_ir.h): index expressions, the tables of elementwise primitives, the
// printer and the verifier.
#include "semantics/kernel_ir/kernel_ir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "semantics/registry.h"

namespace spora::kir {

// ---- Ix ----------------------------------------------------------------------------------

struct Ix::Node {
  Op op = Op::Const;
  int64_t k = 0;
  Var v;
  std::vector<Ix> args;
  size_t hash = 0;
};

namespace {

size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

size_t var_hash(const Var& v) {
  return mix(mix(mix(static_cast<size_t>(v.kind), static_cast<size_t>(v.axis + 1)), v.inner),
             static_cast<size_t>(v.copy));
}

}  // namespace

Ix::Ix() {
  static const Ix zero = constant(0);
  n_ = zero.n_;
}

Ix Ix::constant(int64_t k) {
  auto n = std::make_shared<Node>();
  n->op = Op::Const;
  n->k = k;
  n->hash = mix(1, static_cast<size_t>(k));
  return Ix(std::move(n));
}

Ix Ix::var(Var v) {
  auto n = std::make_shared<Node>();
  n->op = Op::Var;
  n->v = v;
  n->hash = mix(2, var_hash(v));
  return Ix(std::move(n));
}

Ix Ix::sum(std::vector<Ix> terms) {
  if (terms.size() < 2) throw std::logic_error("kir::Ix::sum of fewer than two terms");
  auto n = std::make_shared<Node>();
  n->op = Op::Sum;
  n->hash = 3;
  for (const Ix& t : terms) n->hash = mix(n->hash, t.hash());
  n->args = std::move(terms);
  return Ix(std::move(n));
}

Ix Ix::with_constant(Op op, Ix x, int64_t k) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->k = k;
  n->hash = mix(mix(static_cast<size_t>(op) + 1, static_cast<size_t>(k)), x.hash());
  n->args.push_back(std::move(x));
  return Ix(std::move(n));
}

Ix Ix::scale(Ix x, int64_t k) { return with_constant(Op::Scale, std::move(x), k); }
Ix Ix::div(Ix x, int64_t k) { return with_constant(Op::Div, std::move(x), k); }
Ix Ix::mod(Ix x, int64_t k) { return with_constant(Op::Mod, std::move(x), k); }

Ix::Op Ix::op() const { return n_->op; }
int64_t Ix::k() const { return n_->k; }
const Var& Ix::v() const { return n_->v; }
const std::vector<Ix>& Ix::args() const { return n_->args; }
size_t Ix::hash() const { return n_->hash; }

bool Ix::depends_inner() const {
  if (op() == Op::Var) return v().depends_inner();
  for (const Ix& a : args())
    if (a.depends_inner()) return true;
  return false;
}

bool Ix::uses(Var::Kind kind) const {
  if (op() == Op::Var) return v().kind == kind;
  for (const Ix& a : args())
    if (a.uses(kind)) return true;
  return false;
}

Ix Ix::with_inner_copy(int copy) const {
  switch (op()) {
    case Op::Const:
      return *this;
    case Op::Var: {
      if (!v().depends_inner()) return *this;
      Var w = v();
      w.copy = copy;
      return var(w);
    }
    case Op::Sum: {
      std::vector<Ix> t;
      for (const Ix& a : args()) t.push_back(a.with_inner_copy(copy));
      return sum(std::move(t));
    }
    case Op::Scale:
      return scale(args()[0].with_inner_copy(copy), k());
    case Op::Div:
      return div(args()[0].with_inner_copy(copy), k());
    case Op::Mod:
      return mod(args()[0].with_inner_copy(copy), k());
  }
  return *this;
}

bool Ix::operator==(const Ix& o) const {
  if (n_ == o.n_) return true;
  if (hash() != o.hash() || op() != o.op() || k() != o.k()) return false;
  if (op() == Op::Var) return v() == o.v();
  if (args().size() != o.args().size()) return false;
  for (size_t i = 0; i < args().size(); ++i)
    if (!(args()[i] == o.args()[i])) return false;
  return true;
}

// ---- operands, builders, tables ----------------------------------------------------------

bool Operand::operator==(const Operand& o) const {
  if (kind != o.kind || dtype != o.dtype) return false;
  if (kind == Kind::Value) return id == o.id && copy == o.copy;
  return std::memcmp(&lit, &o.lit, sizeof lit) == 0;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::All:
      return "all";
    case ReduceOp::Any:
      return "any";
  }
  return "sum";
}

namespace {

const ElementwiseFn kFns[] = {
    // unary, real
    {"neg", 1, true}, {"abs", 1, true}, {"sign", 1, true}, {"square", 1, true},
    {"relu", 1, true}, {"floor", 1, true}, {"ceil", 1, true}, {"round", 1, true},
    {"exp", 1, true}, {"log", 1, true}, {"sqrt", 1, true}, {"rsqrt", 1, true},
    {"tanh", 1, true}, {"sigmoid", 1, true}, {"gelu", 1, true}, {"sin", 1, true},
    {"cos", 1, true}, {"erf", 1, true}, {"log1p", 1, true}, {"expm1", 1, true},
    {"reciprocal", 1, true},
    // binary, real
    {"add", 2, true}, {"sub", 2, true}, {"mul", 2, true}, {"div", 2, true},
    {"floordiv", 2, true}, {"mod", 2, true}, {"pow", 2, true}, {"maximum", 2, true},
    {"minimum", 2, true},
    // comparisons
    {"eq", 2, false}, {"ne", 2, false}, {"lt", 2, false}, {"le", 2, false}, {"gt", 2, false},
    {"ge", 2, false},
};

const ElementwiseFn* find_fn(const std::string& name, int arity, bool real) {
  for (const ElementwiseFn& f : kFns)
    if (f.arity == arity && f.real == real && name == f.name) return &f;
  if (!real) return nullptr;
  if (loop_form(name) != arity) return nullptr;
  // One entry per facet primitive, its name held by the registry's row (rows are never
  // removed, and a map's nodes stay put).
  static std::mutex mutex;
  static std::map<std::string, ElementwiseFn> rows;
  std::lock_guard lock(mutex);
  auto it = rows.find(name);
  if (it == rows.end()) it = rows.emplace(name, ElementwiseFn{nullptr, arity, true}).first;
  it->second.name = it->first.c_str();
  return &it->second;
}

}  // namespace

int loop_form(const std::string& name) {
  for (const ElementwiseFn& f : kFns)
    if (name == f.name) return 0;
  const sem::Primitive* p = sem::Registry::instance().find(name);
  const int* arity = p ? p->facet<int>(kLoopFormFacet) : nullptr;
  return arity ? *arity : 0;
}

std::vector<std::string> loop_form_calls(const Kernel& k) {
  std::set<std::string> out;
  auto scan = [&](const std::vector<Stmt>& stmts) {
    for (const Stmt& s : stmts)
      if (s.kind == Stmt::Kind::Define &&
          (s.expr.op == Expr::Op::Unary || s.expr.op == Expr::Op::Binary) && loop_form(s.expr.fn))
        out.insert(s.expr.fn);
  };
  scan(k.row_setup);
  scan(k.inner_setup);
  scan(k.epilogue);
  for (const Pass& p : k.passes) {
    scan(p.pre);
    scan(p.body);
    scan(p.post);
    scan(p.loop.interleaved);
  }
  return {out.begin(), out.end()};
}

const ElementwiseFn* unary_fn(const std::string& name) { return find_fn(name, 1, true); }
const ElementwiseFn* binary_fn(const std::string& name) { return find_fn(name, 2, true); }
const ElementwiseFn* compare_fn(const std::string& name) { return find_fn(name, 2, false); }

Stmt define(int id, Expr e) {
  Stmt s;
  s.kind = Stmt::Kind::Define;
  s.id = id;
  s.expr = std::move(e);
  return s;
}
Stmt coord(Var c, Ix index) {
  Stmt s;
  s.kind = Stmt::Kind::Coord;
  s.coord = c;
  s.index = std::move(index);
  return s;
}
Stmt store(int buffer, Ix index, Operand value) {
  Stmt s;
  s.kind = Stmt::Kind::Store;
  s.buffer = buffer;
  s.index = std::move(index);
  s.value = value;
  return s;
}
Stmt check(Operand value, int64_t limit) {
  Stmt s;
  s.kind = Stmt::Kind::Check;
  s.value = value;
  s.limit = limit;
  return s;
}
Expr load(int buffer, DType d, Ix index) {
  Expr e;
  e.op = Expr::Op::Load;
  e.dtype = d;
  e.buffer = buffer;
  e.index = std::move(index);
  return e;
}
Expr unary(const std::string& fn, Operand a) {
  Expr e;
  e.op = Expr::Op::Unary;
  e.dtype = a.dtype;
  e.fn = fn;
  e.args = {a};
  return e;
}
Expr binary(const std::string& fn, DType d, Operand a, Operand b) {
  Expr e;
  e.op = Expr::Op::Binary;
  e.dtype = d;
  e.fn = fn;
  e.args = {a, b};
  return e;
}
Expr compare(const std::string& fn, Operand a, Operand b) {
  Expr e;
  e.op = Expr::Op::Compare;
  e.dtype = DType::boolean;
  e.fn = fn;
  e.args = {a, b};
  return e;
}

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---- printer -------------------------------------------------------------------------------

namespace {

std::string copy_suffix(int copy) { return copy == 0 ? "" : "." + std::to_string(copy); }

std::string var_name(const Var& v) {
  std::string s = v.kind == Var::Kind::Row     ? "r"
                  : v.kind == Var::Kind::Inner ? "j"
                                               : "c" + std::to_string(v.axis);
  return s + copy_suffix(v.copy);
}

std::string print_ix(const Ix& x, bool top) {
  switch (x.op()) {
    case Ix::Op::Const:
      return std::to_string(x.k());
    case Ix::Op::Var:
      return var_name(x.v());
    case Ix::Op::Sum: {
      std::string s;
      for (const Ix& t : x.args()) s += (s.empty() ? "" : " + ") + print_ix(t, false);
      return top ? s : "(" + s + ")";
    }
    case Ix::Op::Scale:
      return fmt::format("{}*{}", print_ix(x.args()[0], false), x.k());
    case Ix::Op::Div:
      return fmt::format("({} / {})", print_ix(x.args()[0], false), x.k());
    case Ix::Op::Mod:
      return fmt::format("({} % {})", print_ix(x.args()[0], false), x.k());
  }
  return "?";
}

std::string type_of(DType d) { return std::string(dtype_name(d)); }

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

std::string expr_str(const Expr& e) {
  auto args = [&] {
    std::string s;
    for (const Operand& a : e.args) s += (s.empty() ? "" : ", ") + print(a);
    return s;
  };
  switch (e.op) {
    case Expr::Op::Load:
      return fmt::format("load in{}[{}]", e.buffer, print(e.index));
    case Expr::Op::Unary:
    case Expr::Op::Binary:
    case Expr::Op::Compare:
      return e.fn + " " + args();
    case Expr::Op::And:
      return "and " + args();
    case Expr::Op::Or:
      return "or " + args();
    case Expr::Op::Not:
      return "not " + args();
    case Expr::Op::Select:
      return "select " + args();
    case Expr::Op::Cast:
      return "cast " + args();
    case Expr::Op::FiniteOrZero:
      return "finite_or_zero " + args();
    case Expr::Op::ClassMatch:
      return fmt::format("class_match {}, {}", args(), print(e.index));
    case Expr::Op::Dropout:
      return fmt::format("dropout {}, p={}, seed={}, at {}", args(), e.p, e.seed, print(e.index));
    case Expr::Op::Reduced:
      return fmt::format("{} {}{}", e.mean ? "mean" : "reduced",
                         e.total ? "t" + std::to_string(e.acc) : "a" + std::to_string(e.acc),
                         e.mean ? fmt::format(" / {}", e.count) : "");
  }
  return "?";
}

std::string stmt_str(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::Define:
      return fmt::format("v{}{}: {} = {}", s.id, copy_suffix(s.copy), type_of(s.expr.dtype),
                         expr_str(s.expr));
    case Stmt::Kind::Coord:
      return fmt::format("{} = {}", var_name(s.coord), print(s.index));
    case Stmt::Kind::Store:
      return fmt::format("store out{}[{}] = {}", s.buffer, print(s.index), print(s.value));
    case Stmt::Kind::Check:
      return fmt::format("check 0 <= {} < {}", print(s.value), s.limit);
  }
  return "?";
}

// The declaration: name, dtype, operation (the accumulated value is printed where it is).
std::string acc_str(const Accumulator& a) {
  return fmt::format("{}{}: {} {}", a.total ? "t" : "a", a.id, type_of(a.dtype),
                     reduce_op_name(a.op));
}

void lines(std::string& out, const std::vector<Stmt>& stmts, const std::string& ind) {
  for (const Stmt& s : stmts) out += ind + stmt_str(s) + "\n";
}

}  // namespace

std::string print(const Ix& x) { return print_ix(x, true); }

std::string print(const Operand& o) {
  if (o.kind == Operand::Kind::Value) return "v" + std::to_string(o.id) + copy_suffix(o.copy);
  return fmt::format("{}:{}", o.lit, type_of(o.dtype));
}

std::string print(const Kernel& k) {
  std::string out = "kernel " + k.describe + "\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    out += fmt::format("  in{}: {}{}{}{}\n", i, type_of(k.inputs[i].dtype),
                       shape_str(k.inputs[i].shape),
                       static_cast<int>(i) == static_cast<int>(k.inputs.size()) - 1 && k.anchor >= 0
                           ? " (anchor)"
                           : "",
                       i < k.in_place_ok.size() && k.in_place_ok[i] ? " (in place)" : "");
  for (size_t i = 0; i < k.outputs.size(); ++i)
    out += fmt::format("  out{}: {}{}\n", i, type_of(k.outputs[i].dtype),
                       shape_str(k.outputs[i].shape));
  for (const Accumulator& t : k.totals) out += "  total " + acc_str(t) + "\n";
  out += fmt::format("  for r in [0, {}){}:\n", k.rows, k.tile ? fmt::format(" tiles of {}", k.tile) : "");
  lines(out, k.row_setup, "    ");
  for (size_t p = 0; p < k.passes.size(); ++p) {
    const Pass& ps = k.passes[p];
    out += fmt::format("    pass {}:\n", p);
    lines(out, ps.pre, "      ");
    for (const Accumulator& a : ps.accs) out += "      acc " + acc_str(a) + "\n";
    if (ps.has_inner_loop()) {
      std::string loop = fmt::format("for j in [0, {})", k.inner);
      if (!k.inner_nest.empty()) {
        loop = "for";
        for (const auto& [v, n] : k.inner_nest) loop += fmt::format(" {} in [0, {})", var_name(v), n);
        loop += ", j = " + print(k.inner_index);
      }
      if (ps.loop.vector_width > 1) loop += fmt::format(" vector {}", ps.loop.vector_width);
      if (ps.loop.interleave > 1) loop += fmt::format(" interleave {}", ps.loop.interleave);
      out += "      " + loop + ":\n";
      if (ps.loop.interleave > 1) {
        lines(out, ps.loop.interleaved, "        ");
        out += "      remainder:\n";
      }
      if (k.inner_nest.empty()) lines(out, k.inner_setup, "        ");
      lines(out, ps.body, "        ");
      for (const Accumulator& a : ps.accs)
        out += fmt::format("        a{} {}= {}\n", a.id, reduce_op_name(a.op), print(a.value));
      for (size_t t : ps.body_totals)
        out += fmt::format("        t{} {}= {}\n", t, reduce_op_name(k.totals[t].op),
                           print(k.totals[t].value));
    }
    lines(out, ps.post, "      ");
    for (size_t t : ps.post_totals)
      out += fmt::format("      t{} {}= {}\n", t, reduce_op_name(k.totals[t].op),
                         print(k.totals[t].value));
  }
  if (!k.epilogue.empty()) {
    out += "  epilogue:\n";
    lines(out, k.epilogue, "    ");
  }
  return out;
}

// ---- verifier ------------------------------------------------------------------------------

namespace {

struct Range {
  int64_t lo = 0, hi = 0;
};

class Verifier {
 public:
  explicit Verifier(const Kernel& k) : k_(k) {}

  std::string run() {
    if (k_.passes.empty()) err("", "the kernel has no passes");
    if (k_.rows < 1 || k_.inner < 1)
      err("", fmt::format("loop extents rows {} x inner {}", k_.rows, k_.inner));
    for (const Accumulator& t : k_.totals)
      if (!t.total) err("totals", fmt::format("t{} is not marked as a total", t.id));
    scope_ = Scope::Row;
    for (const Stmt& s : k_.row_setup) coord_stmt(s, "row setup", false);
    std::map<int, const Accumulator*> done_accs;  // row accumulators whose loop has ended
    for (size_t p = 0; p < k_.passes.size(); ++p) {
      const Pass& ps = k_.passes[p];
      const std::string where = fmt::format("pass {}", p);
      scope_ = Scope::Row;
      for (const Stmt& s : ps.pre) stmt(s, where + " pre");
      for (const Accumulator& a : ps.accs)
        if (a.total) err(where, fmt::format("row accumulator a{} marked as a total", a.id));
      // The body: its own values end with the loop.
      const auto row_values = defined_;
      scope_ = Scope::Body;
      for (const auto& [v, n] : k_.inner_nest) {
        if (v.kind != Var::Kind::Coord || !v.inner)
          err(where, "an inner nest variable that is not an inner coordinate");
        coords_.insert(v.axis);
      }
      if (!k_.inner_nest.empty()) index(k_.inner_index, where + " inner index", -1);
      if (ps.has_inner_loop()) {
        for (const Stmt& s : k_.inner_setup) coord_stmt(s, where + " inner setup", true);
        for (const Stmt& s : ps.body) stmt(s, where + " body");
        for (const Accumulator& a : ps.accs) acc(a, where + " body");
        for (size_t t : ps.body_totals) total_update(t, where + " body");
        if (ps.loop.vector_width < 1 || ps.loop.interleave < 1)
          err(where, fmt::format("vector width {}, interleave {}", ps.loop.vector_width,
                                 ps.loop.interleave));
        if (ps.loop.interleave > 1) {
          auto saved = defined_;
          for (const Stmt& s : ps.loop.interleaved) {
            if (s.kind == Stmt::Kind::Coord) {
              coords_.insert(s.coord.axis);
              index(s.index, where + " interleaved", -1);
            } else {
              stmt(s, where + " interleaved");
            }
          }
          defined_ = saved;
        }
      }
      defined_ = row_values;
      for (const Stmt& s : k_.inner_setup) coords_.erase(s.coord.axis);
      for (const auto& [v, n] : k_.inner_nest) coords_.erase(v.axis);
      scope_ = Scope::Row;
      for (const Accumulator& a : ps.accs) done_accs[a.id] = &a;
      done_accs_ = &done_accs;
      for (const Stmt& s : ps.post) stmt(s, where + " post");
      for (size_t t : ps.post_totals) total_update(t, where + " post");
      done_accs_ = nullptr;
    }
    // The epilogue sees only the totals and its own values.
    defined_.clear();
    scope_ = Scope::Epilogue;
    for (const Stmt& s : k_.epilogue) stmt(s, "epilogue");
    return errors_;
  }

 private:
  enum class Scope { Row, Body, Epilogue };
  const Kernel& k_;
  Scope scope_ = Scope::Row;
  std::map<std::pair<int, int>, DType> defined_;  // (id, copy) -> dtype
  std::set<int> coords_;                          // decoded coordinates in scope
  std::map<int, const Accumulator*>* done_accs_ = nullptr;
  std::string errors_;

  void err(const std::string& where, const std::string& what) {
    errors_ += (where.empty() ? "" : where + ": ") + what + "\n";
  }

  void operand(const Operand& o, const std::string& where) {
    if (o.kind == Operand::Kind::Literal) return;
    auto it = defined_.find({o.id, o.copy});
    if (it == defined_.end()) {
      err(where, fmt::format("{} is used before it is defined (or outside its scope)", print(o)));
      return;
    }
    if (it->second != o.dtype)
      err(where, fmt::format("{} is used as {} but defined as {}", print(o), dtype_name(o.dtype),
                             dtype_name(it->second)));
  }

  Range var_range(const Var& v, const std::string& where) {
    switch (v.kind) {
      case Var::Kind::Row:
        if (scope_ == Scope::Epilogue) err(where, "r used in the epilogue");
        return {0, k_.rows - 1};
      case Var::Kind::Inner:
        if (scope_ != Scope::Body) err(where, "j used outside the inner loop");
        return {0, k_.inner - 1};
      case Var::Kind::Coord:
        if (v.axis < 0 || static_cast<size_t>(v.axis) >= k_.domain.size()) {
          err(where, fmt::format("c{} is not an axis of the domain {}", v.axis,
                                 shape_str(k_.domain)));
          return {0, 0};
        }
        if (!coords_.count(v.axis)) err(where, fmt::format("c{} is not defined here", v.axis));
        if (v.inner && scope_ != Scope::Body)
          err(where, fmt::format("inner coordinate c{} used outside the inner loop", v.axis));
        return {0, k_.domain[static_cast<size_t>(v.axis)] - 1};
    }
    return {0, 0};
  }

  // The range of x over all values of its variables (interval arithmetic).
  Range range(const Ix& x, const std::string& where) {
    switch (x.op()) {
      case Ix::Op::Const:
        return {x.k(), x.k()};
      case Ix::Op::Var:
        return var_range(x.v(), where);
      case Ix::Op::Sum: {
        Range r{0, 0};
        for (const Ix& t : x.args()) {
          Range a = range(t, where);
          r.lo += a.lo;
          r.hi += a.hi;
        }
        return r;
      }
      case Ix::Op::Scale: {
        Range a = range(x.args()[0], where);
        int64_t p = a.lo * x.k(), q = a.hi * x.k();
        return {std::min(p, q), std::max(p, q)};
      }
      case Ix::Op::Div:
      case Ix::Op::Mod: {
        Range a = range(x.args()[0], where);
        if (x.k() <= 0) {
          err(where, fmt::format("{} by {} in {}", x.op() == Ix::Op::Div ? "division" : "remainder",
                                 x.k(), print(x)));
          return a;
        }
        if (a.lo < 0)
          err(where, fmt::format("{} of a possibly negative value in {}",
                                 x.op() == Ix::Op::Div ? "division" : "remainder", print(x)));
        if (x.op() == Ix::Op::Div) return {a.lo / x.k(), a.hi / x.k()};
        return {0, std::min(a.hi, x.k() - 1)};
      }
    }
    return {0, 0};
  }

  // An index into a buffer of n elements (n < 0: any non-negative value).
  void index(const Ix& x, const std::string& where, int64_t n) {
    Range r = range(x, where);
    if (r.lo < 0 || (n >= 0 && r.hi >= n))
      err(where, fmt::format("index {} takes values in [{}, {}], outside [0, {})", print(x), r.lo,
                             r.hi, n < 0 ? std::string("inf") : std::to_string(n)));
  }

  void coord_stmt(const Stmt& s, const std::string& where, bool inner) {
    if (s.kind != Stmt::Kind::Coord) {
      err(where, "a statement that is not a coordinate");
      return;
    }
    if (s.coord.kind != Var::Kind::Coord || s.coord.inner != inner)
      err(where, fmt::format("{} defines {}", inner ? "inner setup" : "row setup",
                             var_name(s.coord)));
    index(s.index, where, -1);
    coords_.insert(s.coord.axis);
  }

  void acc(const Accumulator& a, const std::string& where) {
    operand(a.value, where);
    check_acc_type(a, where);
  }

  void check_acc_type(const Accumulator& a, const std::string& where) {
    const bool logical = a.op == ReduceOp::All || a.op == ReduceOp::Any;
    if (logical ? a.dtype != DType::i32 : !(a.dtype == DType::f32 || a.dtype == DType::f64))
      err(where, fmt::format("{} accumulator {}{} of dtype {}", reduce_op_name(a.op),
                             a.total ? "t" : "a", a.id, dtype_name(a.dtype)));
  }

  void total_update(size_t t, const std::string& where) {
    if (t >= k_.totals.size()) {
      err(where, fmt::format("total t{} of {}", t, k_.totals.size()));
      return;
    }
    acc(k_.totals[t], where);
  }

  static bool real(DType d) { return d == DType::f32 || d == DType::f64; }

  void expr(const Expr& e, const std::string& where) {
    for (const Operand& a : e.args) operand(a, where);
    auto arity = [&](size_t n) {
      if (e.args.size() != n) {
        err(where, fmt::format("{} with {} operands (needs {})", expr_str(e), e.args.size(), n));
        return false;
      }
      return true;
    };
    auto want = [&](bool ok, const std::string& what) {
      if (!ok) err(where, fmt::format("{}: {} (result {})", expr_str(e), what, dtype_name(e.dtype)));
    };
    switch (e.op) {
      case Expr::Op::Load:
        arity(0);
        if (e.buffer < 0 || static_cast<size_t>(e.buffer) >= k_.inputs.size()) {
          err(where, fmt::format("load of in{} ({} inputs)", e.buffer, k_.inputs.size()));
          return;
        }
        want(k_.inputs[static_cast<size_t>(e.buffer)].dtype == e.dtype,
             fmt::format("in{} holds {}", e.buffer,
                         dtype_name(k_.inputs[static_cast<size_t>(e.buffer)].dtype)));
        index(e.index, where, k_.inputs[static_cast<size_t>(e.buffer)].numel());
        return;
      case Expr::Op::Unary:
        if (!arity(1)) return;
        want(unary_fn(e.fn) != nullptr, "not a unary primitive");
        want(real(e.dtype) && e.args[0].dtype == e.dtype, "needs a real operand of its dtype");
        return;
      case Expr::Op::Binary:
        if (!arity(2)) return;
        want(binary_fn(e.fn) != nullptr, "not a binary primitive");
        // The second operand may be of another numeric dtype (C's conversions).
        want(real(e.dtype) && real(e.args[0].dtype) && e.args[1].dtype != DType::boolean,
             "needs real operands");
        return;
      case Expr::Op::Compare:
        if (!arity(2)) return;
        want(compare_fn(e.fn) != nullptr, "not a comparison");
        want(e.dtype == DType::boolean, "a comparison gives bool");
        return;
      case Expr::Op::And:
      case Expr::Op::Or:
        if (!arity(2)) return;
        want(e.dtype == DType::boolean && e.args[0].dtype == DType::boolean &&
                 e.args[1].dtype == DType::boolean,
             "needs bool operands");
        return;
      case Expr::Op::Not:
        if (!arity(1)) return;
        want(e.dtype == DType::boolean && e.args[0].dtype == DType::boolean, "needs a bool");
        return;
      case Expr::Op::Select:
        if (!arity(3)) return;
        want(e.args[0].dtype == DType::boolean, "the condition is not bool");
        return;
      case Expr::Op::Cast:
        arity(1);
        return;
      case Expr::Op::FiniteOrZero:
        if (!arity(1)) return;
        want(real(e.dtype) && e.args[0].dtype == e.dtype, "needs a real operand of its dtype");
        return;
      case Expr::Op::ClassMatch:
        if (!arity(1)) return;
        want(real(e.dtype), "gives a real");
        index(e.index, where, -1);
        return;
      case Expr::Op::Dropout:
        if (!arity(1)) return;
        want(real(e.dtype) && e.args[0].dtype == e.dtype, "needs a real operand of its dtype");
        want(e.p > 0 && e.p <= 1, fmt::format("p = {}", e.p));
        index(e.index, where, -1);
        return;
      case Expr::Op::Reduced: {
        arity(0);
        const Accumulator* a = nullptr;
        if (e.total) {
          if (scope_ != Scope::Epilogue) err(where, fmt::format("t{} read before the nest ends", e.acc));
          if (e.acc >= 0 && static_cast<size_t>(e.acc) < k_.totals.size())
            a = &k_.totals[static_cast<size_t>(e.acc)];
        } else if (done_accs_) {
          auto it = done_accs_->find(e.acc);
          if (it != done_accs_->end()) a = it->second;
        }
        if (!a) {
          err(where, fmt::format("{}{} read where its loop has not ended", e.total ? "t" : "a",
                                 e.acc));
          return;
        }
        want(a->op == e.red, fmt::format("the accumulator is a {}", reduce_op_name(a->op)));
        const bool logical = a->op == ReduceOp::All || a->op == ReduceOp::Any;
        want(logical ? e.dtype == DType::boolean : real(e.dtype), "the reduction's dtype");
        want(!e.mean || e.count > 0, fmt::format("a mean over {} elements", e.count));
        return;
      }
    }
  }

  void stmt(const Stmt& s, const std::string& where) {
    switch (s.kind) {
      case Stmt::Kind::Define: {
        expr(s.expr, where);
        auto [it, fresh] = defined_.emplace(std::make_pair(s.id, s.copy), s.expr.dtype);
        if (!fresh || !all_ids_.insert({s.id, s.copy}).second)
          err(where, fmt::format("v{}{} is defined twice", s.id, copy_suffix(s.copy)));
        return;
      }
      case Stmt::Kind::Coord:
        err(where, "a coordinate outside the setup");
        return;
      case Stmt::Kind::Store: {
        operand(s.value, where);
        if (s.buffer < 0 || static_cast<size_t>(s.buffer) >= k_.outputs.size()) {
          err(where, fmt::format("store to out{} ({} outputs)", s.buffer, k_.outputs.size()));
          return;
        }
        const Buffer& b = k_.outputs[static_cast<size_t>(s.buffer)];
        if (b.dtype != s.value.dtype)
          err(where, fmt::format("store of {} {} into out{} of {}", dtype_name(s.value.dtype),
                                 print(s.value), s.buffer, dtype_name(b.dtype)));
        index(s.index, where, b.numel());
        return;
      }
      case Stmt::Kind::Check:
        operand(s.value, where);
        if (s.limit <= 0) err(where, fmt::format("check against {}", s.limit));
        return;
    }
  }

  std::set<std::pair<int, int>> all_ids_;
};

}  // namespace

std::string verify(const Kernel& k) { return Verifier(k).run(); }

}  // namespace spora::kir
