// Abstract values of the lowering (see semantics/lower.h): what the compiler knows about a
// value while it specialises a program. Run-time data is an IR node; everything else is static.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lang/ast.h"
#include "semantics/ir/ir.h"

namespace spora::sem::lower {

struct AVal;
using AV = std::shared_ptr<const AVal>;
struct Env;

// clang-format off
enum class AK {
  Error,       // the result of an expression that already produced a diagnostic (poison)
  None,        // `none`, and the result of a function without a return value
  Node,        // run-time data: an IR node (node may be null in a skeleton: type only)
  Int, Float, Bool, Str,   // static scalars (weakly typed numbers)
  DType,       // f32, i32, ... used as values (cast(x, f64))
  Tuple,       // elems
  Record,      // a model instance or record: names + elems, model, statics (ctor args)
  Def,         // a top-level `def` (or a method when self is set)
  Closure,     // a lambda with its captured environment
  Builtin,     // a primitive of the registry or a built-in special form (name)
  ModelClass,  // a `model` declaration: calling it constructs an instance
  Namespace,   // an imported module (`nn` after `import std.nn`)
  Transform,   // grad(f) / value_and_grad(f): s names it, elems[0] is f, wrt the arguments, b has_aux
  Pullback,    // the backward function vjp returns (payload: the recorded region)
  // A function chosen at run time (closures.cpp): elems[0] the tag (an i32 node), elems[1 + k]
  // the captured run-time values of candidate k (a tuple of nodes), statics[k] candidate k (its
  // capture key, the function with its captures by type).
  Union,
};
// clang-format on

struct AVal {
  AK kind = AK::None;
  ir::Node* node = nullptr;     // Node
  TypeP type;                   // Node (also in skeletons)
  int64_t i = 0;                // Int
  double f = 0;                 // Float
  bool b = false;               // Bool
  std::string s;                // Str; Builtin name; Namespace name
  DType dtype = DType::f32;     // DType
  std::vector<AV> elems;        // Tuple; Record field values
  std::vector<std::string> names;        // Record field names
  std::string record_name;               // Record (model name)
  const lang::ModelDef* model = nullptr; // Record (instance of), ModelClass
  std::vector<std::pair<std::string, AV>> statics;  // Record: constructor arguments
  const lang::FuncDef* def = nullptr;    // Def
  AV self;                               // Def: bound method receiver
  int module = 0;                        // Def, ModelClass, Namespace: the AST module index
  const lang::Expr* lambda = nullptr;    // Closure
  std::shared_ptr<const Env> env;        // Closure: captured bindings
  const Primitive* prim = nullptr;       // Builtin backed by a primitive
  std::vector<int64_t> wrt;              // Transform: differentiated argument positions
  bool wrt_tuple = false;                // Transform: wrt was given as a tuple
  std::shared_ptr<void> payload;         // Pullback
  int64_t stage = -1;                    // Record: the k of `@stage(k) param l = ...` holding it
};

AV make_error();
AV make_none();
AV make_node(ir::Node* n);
AV make_int(int64_t v);
AV make_float(double v);
AV make_bool(bool v);
AV make_str(std::string v);
AV make_dtype(DType d);
AV make_tuple(std::vector<AV> elems);

bool is_static_number(const AV& v);  // Int, Float or Bool
bool is_function(const AV& v);  // Def, Closure, Builtin, ModelClass, Transform, Pullback, Union
// Does v contain (recursively) a function-like value / an Error / a static leaf?
bool contains_function(const AV& v);
bool contains_error(const AV& v);
bool contains_static(const AV& v);   // any leaf that is not a Node (None excepted)
// A canonical text of the value's structure: node leaves by type, static leaves by value.
// Two values with the same key specialise a function the same way.
std::string skeleton_key(const AV& v);
// The kind of value in words, for diagnostics ("a tuple", "f32[2,3]", "the integer 3").
std::string describe(const AV& v);
// A value's type as an editor shows it: "f32[64,784]", "(f32[3], i32)", "int 3", "MLP model".
std::string type_text(const AV& v);

// A variable binding.
struct Binding {
  AV value;
  bool is_var = false;
  lang::SourceRange decl;
};

// Lexical environment: a stack of block scopes over a module's globals.
struct Env {
  std::vector<std::map<std::string, Binding>> scopes;
  int module = 0;

  const Binding* lookup(const std::string& name) const;
  Binding* lookup_mutable(const std::string& name);
  void declare(const std::string& name, Binding b) { scopes.back()[name] = std::move(b); }
  void push() { scopes.emplace_back(); }
  void pop() { scopes.pop_back(); }
  // One scope holding every visible binding (what a closure captures).
  std::shared_ptr<Env> snapshot() const;
};

}  // namespace spora::sem::lower
