// Expressions: literals, names, operators (with compile-time folding of static operands),
// tensor literals, indexing and slicing, attributes, conditionals and lambdas.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

using lang::BinaryOp;
using lang::ExprKind;

namespace {

const char* prim_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::FloorDiv: return "floordiv";
    case BinaryOp::Mod: return "mod";
    case BinaryOp::MatMul: return "matmul";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Eq: return "eq";
    case BinaryOp::Ne: return "ne";
    case BinaryOp::Lt: return "lt";
    case BinaryOp::Le: return "le";
    case BinaryOp::Gt: return "gt";
    case BinaryOp::Ge: return "ge";
    case BinaryOp::And: return "logical_and";
    case BinaryOp::Or: return "logical_or";
  }
  return "?";
}

double as_double(const AV& v) {
  return v->kind == AK::Float ? v->f : v->kind == AK::Int ? static_cast<double>(v->i) : (v->b ? 1.0 : 0.0);
}

// Floor division of b != 0 into a; a == INT64_MIN, b == -1 (2^63) is the caller's to refuse.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// x ** y for y >= 0 by repeated squaring; nullopt when it does not fit in 64 bits.
std::optional<int64_t> int_pow(int64_t x, int64_t y) {
  int64_t result = 1;
  for (;;) {
    if ((y & 1) != 0 && __builtin_mul_overflow(result, x, &result)) return std::nullopt;
    y >>= 1;
    if (y == 0) return result;
    if (__builtin_mul_overflow(x, x, &x)) return std::nullopt;
  }
}

}  // namespace

// Folds an operator whose operands are both static numbers (Python semantics).
static AV fold(Lowerer& L, BinaryOp op, const AV& a, const AV& b, lang::SourceRange r) {
  const bool ints = a->kind != AK::Float && b->kind != AK::Float;
  switch (op) {
    case BinaryOp::Eq: return make_bool(as_double(a) == as_double(b));
    case BinaryOp::Ne: return make_bool(as_double(a) != as_double(b));
    case BinaryOp::Lt: return make_bool(as_double(a) < as_double(b));
    case BinaryOp::Le: return make_bool(as_double(a) <= as_double(b));
    case BinaryOp::Gt: return make_bool(as_double(a) > as_double(b));
    case BinaryOp::Ge: return make_bool(as_double(a) >= as_double(b));
    case BinaryOp::And: return make_bool(as_double(a) != 0 && as_double(b) != 0);
    case BinaryOp::Or: return make_bool(as_double(a) != 0 || as_double(b) != 0);
    case BinaryOp::MatMul: L.fail(r, "'@' needs tensor operands, not numbers");
    default: break;
  }
  if (ints) {
    int64_t x = a->kind == AK::Int ? a->i : a->b, y = b->kind == AK::Int ? b->i : b->b;
    // Compile-time integers are 64-bit, like the literals: a result that does not fit is an
    // error, never a silent wrap-around.
    auto overflow = [&]() {
      L.fail(r, fmt::format("integer overflow: {} {} {} does not fit in 64 bits", x, lang::to_string(op), y));
    };
    int64_t z = 0;
    switch (op) {
      case BinaryOp::Add:
        if (__builtin_add_overflow(x, y, &z)) overflow();
        return make_int(z);
      case BinaryOp::Sub:
        if (__builtin_sub_overflow(x, y, &z)) overflow();
        return make_int(z);
      case BinaryOp::Mul:
        if (__builtin_mul_overflow(x, y, &z)) overflow();
        return make_int(z);
      case BinaryOp::Div:
        if (y == 0) L.fail(r, "division by zero");
        return make_float(static_cast<double>(x) / static_cast<double>(y));
      case BinaryOp::FloorDiv:
        if (y == 0) L.fail(r, "integer division by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
        return make_int(floor_div(x, y));
      case BinaryOp::Mod:
        if (y == 0) L.fail(r, "integer modulo by zero");
        if (y == -1) return make_int(0);  // floor_div(INT64_MIN, -1) would overflow
        return make_int(x - floor_div(x, y) * y);
      case BinaryOp::Pow:
        if (y >= 0) {
          std::optional<int64_t> p = int_pow(x, y);
          if (!p) overflow();
          return make_int(*p);
        }
        return make_float(std::pow(static_cast<double>(x), static_cast<double>(y)));
      default: break;
    }
  }
  double x = as_double(a), y = as_double(b);
  switch (op) {
    case BinaryOp::Add: return make_float(x + y);
    case BinaryOp::Sub: return make_float(x - y);
    case BinaryOp::Mul: return make_float(x * y);
    case BinaryOp::Div: return make_float(x / y);
    case BinaryOp::FloorDiv: return make_float(std::floor(x / y));
    case BinaryOp::Mod: return make_float(x - std::floor(x / y) * y);
    case BinaryOp::Pow: return make_float(std::pow(x, y));
    default: break;
  }
  L.fail(r, "unsupported operator on numbers");
}

AV Lowerer::eval_binary(BinaryOp op, AV lhs, AV rhs, lang::SourceRange r) {
  if (lhs->kind == AK::Error || rhs->kind == AK::Error) return make_error();
  if (is_static_number(lhs) && is_static_number(rhs)) return fold(*this, op, lhs, rhs, r);
  if (lhs->kind == AK::Str && rhs->kind == AK::Str) {
    if (op == BinaryOp::Add) return make_str(lhs->s + rhs->s);
    if (op == BinaryOp::Eq) return make_bool(lhs->s == rhs->s);
    if (op == BinaryOp::Ne) return make_bool(lhs->s != rhs->s);
  }
  if (lhs->kind == AK::DType && rhs->kind == AK::DType && (op == BinaryOp::Eq || op == BinaryOp::Ne))
    return make_bool((lhs->dtype == rhs->dtype) == (op == BinaryOp::Eq));
  // `x == none` is decided at compile time (Python's `x is None`): optional arguments.
  if ((lhs->kind == AK::None || rhs->kind == AK::None) && (op == BinaryOp::Eq || op == BinaryOp::Ne))
    return make_bool((lhs->kind == rhs->kind) == (op == BinaryOp::Eq));
  // JAX's weak typing: an integer tensor meeting a float literal becomes f32 first.
  auto promote = [&](AV& t, const AV& other) {
    if (t->kind == AK::Node && t->type->is_tensor() && !is_float(t->type->dtype) &&
        t->type->dtype != DType::boolean && other->kind == AK::Float && op != BinaryOp::MatMul) {
      Attrs a;
      a.set("dtype", float_dtype());
      t = emit("cast", {t->node}, a, r);
    }
  };
  promote(lhs, rhs);
  promote(rhs, lhs);
  if (lhs->kind == AK::Tuple && rhs->kind == AK::Tuple && op == BinaryOp::Add) {
    auto elems = lhs->elems;
    elems.insert(elems.end(), rhs->elems.begin(), rhs->elems.end());
    return make_tuple(elems);
  }
  auto tensorish = [](const AV& v) {
    return is_static_number(v) || (v->kind == AK::Node && v->type->is_tensor());
  };
  if (!tensorish(lhs) || !tensorish(rhs))
    fail(r, fmt::format("unsupported operand types for '{}': {} and {}", lang::to_string(op), describe(lhs),
                        describe(rhs)));
  std::vector<Arg> args{{"", lhs, r}, {"", rhs, r}};
  return call_primitive(*Registry::instance().find(prim_of(op)), std::move(args), r);
}

AV Lowerer::eval_unary(lang::UnaryOp op, AV v, lang::SourceRange r) {
  if (v->kind == AK::Error) return v;
  switch (op) {
    case lang::UnaryOp::Pos:
      if (is_static_number(v) || (v->kind == AK::Node && v->type->is_tensor())) return v;
      break;
    case lang::UnaryOp::Neg:
      if (v->kind == AK::Int) {
        if (v->i == std::numeric_limits<int64_t>::min())
          fail(r, fmt::format("integer overflow: -({}) does not fit in 64 bits", v->i));
        return make_int(-v->i);
      }
      if (v->kind == AK::Float) return make_float(-v->f);
      if (v->kind == AK::Node && v->type->is_tensor())
        return call_primitive(*Registry::instance().find("neg"), {{"", v, r}}, r);
      break;
    case lang::UnaryOp::Not:
      if (is_static_number(v)) return make_bool(as_double(v) == 0);
      if (v->kind == AK::Node && v->type->is_tensor())
        return call_primitive(*Registry::instance().find("logical_not"), {{"", v, r}}, r);
      break;
  }
  fail(r, fmt::format("unsupported operand type for unary '{}': {}", lang::to_string(op), describe(v)));
}

AV Lowerer::eval_list(const lang::Expr& e, Env& env) {
  // A tensor literal. All-static leaves fold into one constant; otherwise rows are stacked.
  std::vector<AV> items;
  for (const auto& x : e.elems) items.push_back(eval(*x, env));
  for (const auto& it : items)
    if (it->kind == AK::Error) return it;
  if (items.empty()) fail(e.range, "an empty tensor literal has no dtype: use zeros(shape=[0])");
  // Gather the static structure: every item a number, or every item a (static) nested list.
  std::function<bool(const lang::Expr&, Shape&, std::vector<AV>&, size_t, Env&)> collect;
  bool all_static = true;
  for (const auto& it : items) all_static = all_static && is_static_number(it);
  if (all_static) {
    bool any_float = false, all_bool = true;
    for (const auto& it : items) {
      any_float = any_float || it->kind == AK::Float;
      all_bool = all_bool && it->kind == AK::Bool;
    }
    // Integers are i32 unless one needs 64 bits; i64 elements are written exactly.
    bool wide = false;
    for (const auto& it : items) wide = wide || (it->kind == AK::Int && it->i != static_cast<int32_t>(it->i));
    DType dt = any_float ? float_dtype() : all_bool ? DType::boolean : wide ? DType::i64 : DType::i32;
    Tensor t = Tensor::empty(dt, {static_cast<int64_t>(items.size())});
    for (size_t k = 0; k < items.size(); ++k) {
      if (dt == DType::i64)
        t.data<int64_t>()[k] = items[k]->kind == AK::Int ? items[k]->i : items[k]->b;
      else
        t.set(static_cast<int64_t>(k), as_double(items[k]));
    }
    return make_node(constant(t, e.range));
  }
  // Nested constant literals: if every item is a constant node, merge them into one constant.
  bool all_const = true;
  for (const auto& it : items)
    all_const = all_const && it->kind == AK::Node && it->node->is_constant() && it->node->value.is_tensor() &&
                it->node->graph == graph_;
  if (all_const) {
    const Tensor& first = items[0]->node->value.tensor;
    DType dt = first.dtype();
    for (size_t k = 0; k < items.size(); ++k) {
      const Tensor& t = items[k]->node->value.tensor;
      if (t.shape() != first.shape())
        fail(e.elems[k]->range, fmt::format("ragged tensor literal: row {} has shape {} but row 0 has shape {}", k,
                                            shape_str(t.shape()), shape_str(first.shape())));
      if (is_float(t.dtype())) dt = t.dtype();
      else if (t.dtype() == DType::i64 && !is_float(dt)) dt = DType::i64;
    }
    Shape shape{static_cast<int64_t>(items.size())};
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    Tensor out = Tensor::empty(dt, shape);
    int64_t n = first.numel();
    for (size_t k = 0; k < items.size(); ++k) {
      const Tensor& t = items[k]->node->value.tensor;
      const int64_t at = static_cast<int64_t>(k) * n;
      if (dt == DType::i64 && t.dtype() != DType::boolean) {  // exactly, not through a double
        for (int64_t i = 0; i < n; ++i)
          out.data<int64_t>()[at + i] = t.dtype() == DType::i64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
      } else {
        for (int64_t i = 0; i < n; ++i) out.set(at + i, t.get(i));
      }
    }
    // The row constants are now unused; the verifier tolerates them and DCE removes them.
    return make_node(constant(out, e.range));
  }
  std::vector<Arg> args;
  std::vector<AV> xs;
  for (size_t k = 0; k < items.size(); ++k) xs.push_back(items[k]);
  // stack takes a tuple of tensors; static numbers take the dtype of the run-time items.
  std::optional<DType> dt;
  for (const auto& x : xs)
    if (x->kind == AK::Node && x->type->is_tensor()) dt = dt ? dt : x->type->dtype;
  std::vector<ir::Node*> nodes;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!(is_static_number(xs[k]) || (xs[k]->kind == AK::Node && xs[k]->type->is_tensor())))
      fail(e.elems[k]->range, fmt::format("a tensor literal element must be a number or a tensor, not {}", describe(xs[k])));
    nodes.push_back(to_node(xs[k], e.elems[k]->range, dt));
  }
  Attrs a;
  a.set("axis", int64_t{0});
  return emit("stack", nodes, a, e.range);
}

AV Lowerer::eval_conditional(const lang::Expr& e, Env& env) {
  AV c = known(eval(*e.cond, env));
  if (c->kind == AK::Error) return c;
  if (is_static_number(c)) return as_double(c) != 0 ? eval(*e.then_expr, env) : eval(*e.else_expr, env);
  if (c->kind != AK::Node || !c->type->is_scalar())
    fail(e.cond->range, fmt::format("a condition must be a scalar, not {}", describe(c)));
  ir::Node* cond = c->node;
  if (c->type->dtype != DType::boolean) {
    fail(e.cond->range, fmt::format("a condition must be bool, not {}", c->type->str()));
  }
  // Two zero-parameter branch graphs nested in the current one.
  ir::Graph* outer = current_graph(e.range);
  AV results[2];
  ir::Graph* branches[2];
  const lang::Expr* exprs[2] = {e.then_expr.get(), e.else_expr.get()};
  std::optional<RecursionPending> pending[2];
  for (int k = 0; k < 2; ++k) {
    branches[k] = module_.add_graph(outer->name + (k == 0 ? ".then" : ".else"), outer);
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    try {
      Env benv = env;
      results[k] = eval(*exprs[k], benv);
      if (results[k]->kind == AK::Error) throw Abort{};
    } catch (const RecursionPending& p) {
      pending[k] = p;
    }
  }
  // Inferring a recursive function's result type (lowerer.cpp): the branch without the
  // pending recursive call is the base case, and its value stands for the conditional's (a
  // number literal as it is: its type comes from its use, Spec::literal_base).
  if (pending[0] && pending[1]) throw *pending[0];
  for (int k = 0; k < 2; ++k)
    if (pending[1 - k]) {
      if (results[k]->kind == AK::Float || results[k]->kind == AK::Int) return results[k];
      const Restore<ir::Graph*> in_branch(graph_, branches[k]);
      return materialise_numbers(results[k], exprs[k]->range);
    }
  materialise_branches(results, branches, e.range);
  // Different functions in the branches become a function chosen at run time (closures.cpp).
  if (!merge_branches(results, branches, e.range)) {
    if (contains_function(results[0]) || contains_function(results[1]))
      fail_run_time_function(e.range, "this conditional expression", results);
    fail(e.range, fmt::format("the branches of a conditional expression have different types: {} and {}",
                              describe(results[0]), describe(results[1])));
  }
  for (int k = 0; k < 2; ++k) {
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    branches[k]->output = pack(results[k], exprs[k]->range);
  }
  ir::Node* n = module_.add_apply(graph_, Registry::instance().find("if"),
                                  {cond, module_.add_graph_constant(graph_, branches[0], loc(e.range)),
                                   module_.add_graph_constant(graph_, branches[1], loc(e.range))},
                                  {}, branches[0]->output->type, loc(e.range));
  return unpack(results[0], n, e.range);
}

namespace {
// The first function inside v (through tuples and records), or null.
const AVal* first_function(const AV& v) {
  if (is_function(v) || v->kind == AK::Transform || v->kind == AK::Pullback) return v.get();
  for (const AV& e : v->elems)
    if (const AVal* f = first_function(e)) return f;
  return nullptr;
}

// Where function f is written (invalid for built-ins, transforms and pullbacks).
lang::SourceRange function_range(const AVal& f) {
  if (f.kind == AK::Closure && f.lambda) return f.lambda->range;
  if (f.kind == AK::Def && f.def) return f.def->name_range;
  return {};
}

std::string function_words(const AVal& f) {
  const lang::SourceRange where = function_range(f);
  if (f.kind == AK::Closure && where.valid())
    return fmt::format("the lambda at line {}, column {}", where.begin.line, where.begin.col);
  return describe(std::make_shared<AVal>(f));
}
}  // namespace

void Lowerer::fail_run_time_function(lang::SourceRange r, const std::string& construct, const AV (&results)[2]) {
  std::string gives[2];
  for (int k = 0; k < 2; ++k) {
    const AVal* f = first_function(results[k]);
    gives[k] = f ? function_words(*f) : describe(results[k]);
  }
  error(r,
        fmt::format("{} chooses between {} and {} by a run-time condition; a function chosen at "
                    "run time can only meet another function (or a tuple of functions and values "
                    "of the same types)",
                    construct, gives[0], gives[1]));
  for (int k = 0; k < 2; ++k)
    if (const AVal* f = first_function(results[k]); f && function_range(*f).valid())
      diags_.note(function_range(*f), fmt::format("the {}-branch gives {}", k == 0 ? "then" : "else", function_words(*f)));
  throw Abort{};
}

AV Lowerer::eval_attribute(AV obj, const std::string& name, lang::SourceRange r) {
  if (obj->kind == AK::Error) return obj;
  if (obj->kind == AK::Record) {
    for (size_t k = 0; k < obj->names.size(); ++k)
      if (obj->names[k] == name) return obj->elems[k];
    for (const auto& [n, v] : obj->statics)
      if (n == name) return v;
    if (obj->model) {
      for (const auto& m : obj->model->methods) {
        if (m->name != name) continue;
        auto d = std::make_shared<AVal>();
        d->kind = AK::Def;
        d->def = m.get();
        d->self = obj;
        d->module = 0;
        for (size_t mi = 0; mi < program_.modules.size(); ++mi)
          for (const auto& md : program_.modules[mi]->models)
            if (md.get() == obj->model) d->module = static_cast<int>(mi);
        return d;
      }
    }
    std::string fields;
    for (const auto& n : obj->names) fields += (fields.empty() ? "" : ", ") + n;
    fail(r, fmt::format("{} has no field '{}' (fields: {})", describe(obj), name, fields));
  }
  if (obj->kind == AK::Namespace) {
    auto& g = globals_.at(obj->module);
    auto it = g.find(name);
    if (it == g.end() || !it->second.decl.valid())
      fail(r, fmt::format("module '{}' has no member '{}'", obj->s, name));
    return it->second.value;
  }
  // A static number is a scalar: it has the attributes of the constant it becomes (eager mode
  // knows the value of a run-time condition, so `1 if c else 2` is static there).
  if (is_static_number(obj) && (name == "shape" || name == "ndim" || name == "dtype" || name == "T"))
    return eval_attribute(make_node(to_node(obj, r)), name, r);
  if (obj->kind == AK::Node && obj->type->is_tensor()) {
    const Type& t = *obj->type;
    if (name == "shape") {
      std::vector<AV> dims;
      for (auto d : t.shape) dims.push_back(make_int(d));
      return make_tuple(dims);
    }
    if (name == "ndim") return make_int(t.rank());
    if (name == "dtype") return make_dtype(t.dtype);
    if (name == "T") {
      Attrs a;
      a.set("axes", std::monostate{});
      return call_primitive(*Registry::instance().find("transpose"), {{"", obj, r}}, r);
    }
    fail(r, fmt::format("a tensor has no attribute '{}' (tensors have shape, ndim, dtype, T)", name));
  }
  if (obj->kind == AK::Node && obj->type->kind == Type::Kind::Record) {
    int k = obj->type->field_index(name);
    if (k < 0) fail(r, fmt::format("{} has no field '{}'", obj->type->str(), name));
    Attrs a;
    a.set("field", name);
    return emit("record_get", {obj->node}, a, r);
  }
  fail(r, fmt::format("{} has no attribute '{}'", describe(obj), name));
}

AV Lowerer::eval_index(AV obj, const std::vector<lang::IndexItem>& items, Env& env, lang::SourceRange r) {
  if (obj->kind == AK::Error) return obj;
  // Tuples: a static integer index (negative counts from the end) or a static slice.
  if (obj->kind == AK::Tuple || (obj->kind == AK::Node && obj->type->kind == Type::Kind::Tuple)) {
    const int64_t n = obj->kind == AK::Tuple ? static_cast<int64_t>(obj->elems.size())
                                             : static_cast<int64_t>(obj->type->elems.size());
    if (items.size() != 1 || items[0].is_slice) fail(r, "a tuple takes one integer index");
    AV i = eval(*items[0].index, env);
    if (i->kind == AK::Error) return i;
    if (i->kind != AK::Int)
      fail(items[0].range, fmt::format("a tuple index must be a compile-time integer, not {}{}", describe(i),
                                       i->kind == AK::Node ? " (to iterate a tuple, write `for x in t`)" : ""));
    int64_t k = i->i < 0 ? i->i + n : i->i;
    if (k < 0 || k >= n) fail(items[0].range, fmt::format("tuple index {} is out of range for a tuple of {} elements", i->i, n));
    if (obj->kind == AK::Tuple) return obj->elems[k];
    Attrs a;
    a.set("index", k);
    return emit("tuple_get", {obj->node}, a, r);
  }
  if (obj->kind != AK::Node || !obj->type->is_tensor()) fail(r, fmt::format("{} cannot be indexed", describe(obj)));
  const int64_t rank = obj->type->rank();
  if (static_cast<int64_t>(items.size()) > rank)
    fail(r, fmt::format("too many indices for {}: {} given", obj->type->str(), items.size()));
  std::vector<int64_t> starts, stops, steps, squeeze;
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  // slice reads only the start of a squeezed axis; its stop is start + 1 where that fits.
  auto index_stop = [](int64_t i) { return i < kEnd ? i + 1 : kEnd; };
  auto static_int = [&](const lang::ExprPtr& e, int64_t dflt) -> int64_t {
    if (!e) return dflt;
    AV v = eval(*e, env);
    if (v->kind == AK::Error) throw Abort{};
    if (v->kind != AK::Int) fail(e->range, fmt::format("a slice bound must be a compile-time integer, not {}", describe(v)));
    return v->i;
  };
  // A single run-time scalar index on axis 0: gather.
  if (items.size() == 1 && !items[0].is_slice) {
    AV i = eval(*items[0].index, env);
    if (i->kind == AK::Error) return i;
    if (i->kind == AK::Node) {
      if (!i->type->is_tensor() || !is_integer(i->type->dtype))
        fail(items[0].range, fmt::format("a tensor index must be an integer, not {}", describe(i)));
      Attrs a;
      a.set("axis", int64_t{0});
      return emit("gather", {obj->node, i->node}, a, r);
    }
    if (i->kind != AK::Int) fail(items[0].range, fmt::format("a tensor index must be an integer, not {}", describe(i)));
    starts.push_back(i->i);
    stops.push_back(index_stop(i->i));
    steps.push_back(1);
    squeeze.push_back(0);
  } else {
    for (size_t k = 0; k < items.size(); ++k) {
      const auto& it = items[k];
      if (it.is_slice) {
        int64_t step = static_int(it.step, 1);
        if (step == 0) fail(it.range, "slice step cannot be zero");
        starts.push_back(static_int(it.start, step > 0 ? 0 : kEnd));
        stops.push_back(static_int(it.stop, step > 0 ? kEnd : std::numeric_limits<int64_t>::min()));
        steps.push_back(step);
      } else {
        int64_t i = static_int(it.index, 0);
        starts.push_back(i);
        stops.push_back(index_stop(i));
        steps.push_back(1);
        squeeze.push_back(static_cast<int64_t>(k));
      }
    }
  }
  for (int64_t k = static_cast<int64_t>(items.size()); k < rank; ++k) {
    starts.push_back(0);
    stops.push_back(kEnd);
    steps.push_back(1);
  }
  Attrs a;
  a.set("starts", starts);
  a.set("stops", stops);
  a.set("steps", steps);
  a.set("squeeze", squeeze);
  return emit("slice", {obj->node}, a, r);
}

AV Lowerer::eval(const lang::Expr& e, Env& env) {
  switch (e.kind) {
    case ExprKind::Int: return make_int(e.int_value);
    case ExprKind::Float: return make_float(e.float_value);
    case ExprKind::Bool: return make_bool(e.bool_value);
    case ExprKind::String: return make_str(e.string_value);
    case ExprKind::None: return make_none();
    case ExprKind::Name: {
      if (const Binding* b = env.lookup(e.name)) {
        note_name(e.range, b->value);
        return b->value;
      }
      if (const Binding* b = lookup_global(env.module, e.name)) {
        note_name(e.range, b->value);
        return b->value;
      }
      fail(e.range, unknown_name(env, e.name));
    }
    case ExprKind::List: return eval_list(e, env);
    case ExprKind::Tuple: {
      std::vector<AV> xs;
      for (const auto& x : e.elems) xs.push_back(eval(*x, env));
      return make_tuple(xs);
    }
    case ExprKind::Call: {
      AV callee = eval(*e.callee, env);
      std::vector<Arg> args;
      for (const auto& a : e.args) args.push_back(Arg{"", eval(*a, env), a->range});
      for (const auto& k : e.kwargs) args.push_back(Arg{k.name, eval(*k.value, env), k.value->range});
      if (callee->kind == AK::Error) return callee;
      for (const auto& a : args)
        if (a.value->kind == AK::Error) return a.value;
      return call(callee, std::move(args), e.range);
    }
    case ExprKind::Attribute: return eval_attribute(eval(*e.object, env), e.name, e.range);
    case ExprKind::Index: return eval_index(eval(*e.object, env), e.indices, env, e.range);
    case ExprKind::Unary: return eval_unary(e.unary_op, eval(*e.operand, env), e.range);
    case ExprKind::Binary: {
      AV lhs = eval(*e.lhs, env);
      // Static short-circuit of and/or.
      if (e.binary_op == BinaryOp::And && is_static_number(lhs) && as_double(lhs) == 0) return make_bool(false);
      if (e.binary_op == BinaryOp::Or && is_static_number(lhs) && as_double(lhs) != 0) return make_bool(true);
      AV rhs = eval(*e.rhs, env);
      return eval_binary(e.binary_op, lhs, rhs, e.range);
    }
    case ExprKind::Conditional: return eval_conditional(e, env);
    case ExprKind::Lambda: {
      auto c = std::make_shared<AVal>();
      c->kind = AK::Closure;
      c->lambda = &e;
      c->env = env.snapshot();
      return c;
    }
  }
  fail(e.range, "unsupported expression");
}

}  // namespace spora::sem::lower
