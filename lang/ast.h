// The Spora abstract syntax tree.
//
// Built from the ANTLR parse tree by lang/parser.h, printed by lang/ast_printer.h
// (`spora ir --stage parsed`), consumed by semantics/lower.h. Every node carries the source
// range it came from. Nodes own their children through unique_ptr; the tree is immutable
// once built. Kinds are enums, not RTTI: switch over `kind` and static_cast.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/diagnostics.h"

namespace spora::lang {

struct Expr;
struct Stmt;
struct TypeExpr;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using TypeExprPtr = std::unique_ptr<TypeExpr>;

// ---------------------------------------------------------------- type expressions
// `f32[B, 784]`, `f32` (a 0-d tensor), `i32[N]`, `int`, `float`, `bool`, `str`, `MLP` (a model
// name), `(f32, i32[3])` (a tuple type). Dims are expressions: integer literals, names (a
// symbolic dim bound per call, or a static int such as a model's `hidden`), or arithmetic of
// those (`2 * hidden`); `?` parses as a Name "?".
struct TypeExpr {
  enum class Kind { Named, Tuple };
  Kind kind = Kind::Named;
  SourceRange range;
  std::string name;                      // Named: f32, i32, int, MLP, ...
  bool has_dims = false;                 // Named: `f32[...]` (true) vs `f32` (false)
  std::vector<ExprPtr> dims;             // Named with brackets
  std::vector<TypeExprPtr> elems;        // Tuple
};

// ---------------------------------------------------------------- expressions
enum class ExprKind {
  Int,          // 42            (int_value, text)
  Float,        // 1.5, 1e-3     (float_value, text)
  Bool,         // true / false  (bool_value)
  String,       // "text"        (string_value, unescaped)
  None,         // none
  Name,         // x             (name)
  List,         // [a, b, c]     (elems): tensor literal, nests
  Tuple,        // (a, b), (a,), ()  (elems)
  Call,         // f(a, b, k=v)  (callee, args, kwargs)
  Attribute,    // obj.name      (object, name)
  Index,        // obj[i, 1:3, ::2]  (object, indices)
  Unary,        // -x, +x, not x (op, operand)
  Binary,       // a + b ...     (op, lhs, rhs)
  Conditional,  // a if c else b (then_expr, cond, else_expr)
  Lambda,       // fn (x, y) => x + y   or   fn (x) { ...block... }
};

enum class UnaryOp { Neg, Pos, Not };
enum class BinaryOp {
  Add, Sub, Mul, Div, FloorDiv, Mod, MatMul, Pow,
  Eq, Ne, Lt, Le, Gt, Ge,
  And, Or,
};
const char* to_string(UnaryOp op);
const char* to_string(BinaryOp op);  // the source spelling: "+", "//", "and", ...

struct KeywordArg {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
};

// One item of an index expression: either a plain expression or a slice start:stop:step
// (each part optional).
struct IndexItem {
  bool is_slice = false;
  ExprPtr index;                           // !is_slice
  ExprPtr start, stop, step;               // is_slice; null when omitted
  SourceRange range;
};

struct Param {
  std::string name;
  SourceRange range;
  TypeExprPtr type;    // null: untyped (inferred per call)
  ExprPtr default_value;  // null: required
};

struct Block;

struct Expr {
  ExprKind kind;
  SourceRange range;

  // literals
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string string_value;
  std::string text;  // literal spelling as written (Int, Float)

  std::string name;  // Name; Attribute (field name)

  std::vector<ExprPtr> elems;  // List, Tuple

  ExprPtr callee;  // Call
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;

  ExprPtr object;  // Attribute, Index
  std::vector<IndexItem> indices;

  UnaryOp unary_op = UnaryOp::Neg;
  BinaryOp binary_op = BinaryOp::Add;
  ExprPtr operand;    // Unary
  ExprPtr lhs, rhs;   // Binary

  ExprPtr cond, then_expr, else_expr;  // Conditional

  std::vector<Param> params;           // Lambda
  ExprPtr body_expr;                   // Lambda with `=> expr`
  std::unique_ptr<Block> body_block;   // Lambda with `{ ... }`

  explicit Expr(ExprKind k) : kind(k) {}
  ~Expr();
};

// ---------------------------------------------------------------- patterns
// Binding targets of let/var/for/assignment: a name, `_`, or a (nested) tuple of patterns.
struct Pattern {
  bool is_tuple = false;
  std::string name;                 // !is_tuple ("_" discards)
  std::vector<Pattern> elems;       // is_tuple
  SourceRange range;
};

// ---------------------------------------------------------------- statements
enum class StmtKind {
  Let,        // let p [: T] = e   /  var p [: T] = e       (pattern, type, value, is_var)
  Assign,     // p = e   (pattern)                          (pattern, value)
  AugAssign,  // x += e  (-=, *=, /=)                       (pattern, aug_op, value)
  Expr,       // e                                          (value)
  Return,     // return [e]                                 (value may be null)
  If,         // if c { } [else { } | else if ...]          (cond, then_block, else_block)
  For,        // for p in e { }                             (pattern, value = iterable, body)
  While,      // while c { }                                (cond, body)
  Assert,     // assert c [, "message"]                     (cond, message)
  Pass,       // pass
};

struct Block {
  std::vector<StmtPtr> stmts;
  SourceRange range;
};

struct Stmt {
  StmtKind kind;
  SourceRange range;
  Pattern pattern;
  TypeExprPtr type;
  bool is_var = false;
  BinaryOp aug_op = BinaryOp::Add;
  ExprPtr value;
  ExprPtr cond;
  ExprPtr message;
  std::unique_ptr<Block> then_block, else_block, body;

  explicit Stmt(StmtKind k) : kind(k) {}
};

// ---------------------------------------------------------------- declarations
// `@jit`, `@checkpoint`, `@custom_grad(bwd)`, `@stage(1)`: a name and optional call arguments.
struct Decorator {
  std::string name;
  SourceRange range;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
};

// def f(x: T, y = 1) -> R { block }    or    def f(x) = expr
struct FuncDef {
  std::string name;
  SourceRange range;       // whole definition
  SourceRange name_range;
  std::vector<Decorator> decorators;
  std::vector<Param> params;
  TypeExprPtr return_type;            // null when not annotated
  std::unique_ptr<Block> body;        // block body
  ExprPtr body_expr;                  // expression body (`= expr`)
};

// Inside a model: `param w: f32[784, hidden] = normal(0.0, 0.02)` (a trainable tensor with
// its initialiser), `param fc1 = Dense(784, 256)` (a sub-model), or `let k = expr` (a
// non-trainable field, e.g. a static setting or a buffer).
struct FieldDecl {
  std::string name;
  SourceRange range;
  bool is_param = true;               // `param` (true) or `let` (false)
  TypeExprPtr type;                   // may be null for sub-models and lets
  ExprPtr init;                       // may be null: zeros() of the declared type
  std::vector<Decorator> decorators;  // e.g. @stage(1) on a sub-model field
};

// model MLP(hidden: int = 512) { fields... def forward(...) ... other methods }
struct ModelDef {
  std::string name;
  SourceRange range;
  SourceRange name_range;
  std::vector<Decorator> decorators;
  std::vector<Param> params;          // constructor (hyper)parameters
  std::vector<FieldDecl> fields;      // in source order
  std::vector<std::unique_ptr<FuncDef>> methods;  // forward and any others
};

// import std.nn [as nn]
struct Import {
  std::vector<std::string> path;      // {"std", "nn"}
  std::string alias;                  // "" when none
  SourceRange range;
};

// A whole .sp file. Top-level `let` statements define module constants.
struct Module {
  int file = -1;                      // SourceManager id
  std::vector<Import> imports;
  std::vector<std::unique_ptr<FuncDef>> functions;
  std::vector<std::unique_ptr<ModelDef>> models;
  std::vector<StmtPtr> globals;       // top-level let statements, in order
  // Declaration order across the three lists, for the printer: (kind 0 fn,1 model,2 global, index)
  std::vector<std::pair<int, int>> order;
};

}  // namespace spora::lang
