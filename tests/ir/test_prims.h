// Primitives and module-building helpers shared by the IR tests.
//
// ensure_prims() registers the real rows (ops::register_all) and then, for any name the
// tests use that ops/ does not provide (yet), a tiny fake row: scalar-or-same-shape arithmetic
// through Tensor::get/set, comparisons giving bool, make_tuple/tuple_get, the four control-flow
// names (eval null: the interpreter runs them), `test_same` (add whose shape rule says
// "operands differ: A and B" unless both types are equal), `test_fail` (a kernel that always raises
// a user error), `test_effect` (an effectful identity) and `test_attrs` (an identity with one
// attribute of each kind).
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "semantics/ir/ir.h"
#include "semantics/registry.h"

namespace spora::ir::testing {

using sem::Attrs;
using sem::Tensor;
using sem::Type;
using sem::TypeP;
using sem::Value;
using spora::DType;

void ensure_prims();
const sem::Primitive* prim(const std::string& name);

// Scalar tensor values and types.
Value f32(double v);
Value i64(int64_t v);
TypeP f32_t(sem::Shape shape = {});
TypeP i64_t(sem::Shape shape = {});
TypeP bool_t();
double scalar(const Value& v);

// Module-building shorthands (types come from the shape rules).
struct Builder {
  Module& m;
  Node* apply(Graph* g, const std::string& p, std::vector<Node*> in, Attrs a = {});
  Node* constant(Graph* g, Value v) { return m.add_constant(g, std::move(v)); }
  Node* ref(Graph* g, Graph* target) { return m.add_graph_constant(g, target); }
  Node* tuple(Graph* g, std::vector<Node*> in) { return apply(g, "make_tuple", std::move(in)); }
  Node* get(Graph* g, Node* t, int64_t i);
};

}  // namespace spora::ir::testing
