#include "semantics/lower/aval.h"

#include <fmt/format.h>

namespace spora::sem::lower {

namespace {
AV with(AK k) {
  auto v = std::make_shared<AVal>();
  v->kind = k;
  return v;
}
}  // namespace

AV make_error() {
  static const AV e = with(AK::Error);
  return e;
}
AV make_none() {
  static const AV n = with(AK::None);
  return n;
}
AV make_node(ir::Node* n) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Node;
  v->node = n;
  v->type = n->type;
  return v;
}
AV make_int(int64_t x) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Int;
  v->i = x;
  return v;
}
AV make_float(double x) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Float;
  v->f = x;
  return v;
}
AV make_bool(bool x) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Bool;
  v->b = x;
  return v;
}
AV make_str(std::string x) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Str;
  v->s = std::move(x);
  return v;
}
AV make_dtype(DType d) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::DType;
  v->dtype = d;
  return v;
}
AV make_tuple(std::vector<AV> elems) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Tuple;
  v->elems = std::move(elems);
  return v;
}

bool is_static_number(const AV& v) {
  return v->kind == AK::Int || v->kind == AK::Float || v->kind == AK::Bool;
}

bool is_function(const AV& v) {
  return v->kind == AK::Def || v->kind == AK::Closure || v->kind == AK::Builtin ||
         v->kind == AK::ModelClass || v->kind == AK::Transform || v->kind == AK::Pullback ||
         v->kind == AK::Union;
}

bool contains_function(const AV& v) {
  if (is_function(v) || v->kind == AK::Namespace) return true;
  for (const auto& e : v->elems)
    if (contains_function(e)) return true;
  for (const auto& [n, s] : v->statics)
    if (contains_function(s)) return true;
  return false;
}

bool contains_error(const AV& v) {
  if (v->kind == AK::Error) return true;
  for (const auto& e : v->elems)
    if (contains_error(e)) return true;
  return false;
}

bool contains_static(const AV& v) {
  switch (v->kind) {
    case AK::Node:
    case AK::None:
      return false;
    case AK::Tuple:
    case AK::Record:
      for (const auto& e : v->elems)
        if (contains_static(e)) return true;
      return false;
    default:
      return true;
  }
}

std::string skeleton_key(const AV& v) {
  switch (v->kind) {
    case AK::Error: return "!";
    case AK::None: return "none";
    case AK::Node: return v->type->str();
    case AK::Int: return fmt::format("int:{}", v->i);
    case AK::Float: return fmt::format("float:{}", v->f);
    case AK::Bool: return v->b ? "true" : "false";
    case AK::Str: return fmt::format("str:{:?}", v->s);
    case AK::DType: return std::string(dtype_name(v->dtype));
    case AK::Tuple: {
      std::string s = "(";
      for (const auto& e : v->elems) s += skeleton_key(e) + ",";
      return s + ")";
    }
    case AK::Record: {
      std::string s = v->record_name + "{";
      for (const auto& [n, st] : v->statics) s += n + "=" + skeleton_key(st) + ",";
      s += "|";
      for (size_t k = 0; k < v->elems.size(); ++k) s += v->names[k] + ":" + skeleton_key(v->elems[k]) + ",";
      return s + "}";
    }
    case AK::Def: return fmt::format("def:{}@{}", v->def->name, static_cast<const void*>(v->def));
    case AK::Closure: return fmt::format("closure@{}", static_cast<const void*>(v.get()));
    case AK::Builtin: return "builtin:" + v->s;
    case AK::ModelClass: return "model:" + v->model->name;
    case AK::Namespace: return "ns:" + v->s;
    case AK::Transform: return v->s + "(" + skeleton_key(v->elems[0]) + ")";
    case AK::Pullback: return fmt::format("pullback@{}", static_cast<const void*>(v.get()));
    case AK::Union: {
      std::string s = "switch<";
      for (const auto& [key, f] : v->statics) s += key + ";";
      s += ">(";
      for (const auto& e : v->elems) s += skeleton_key(e) + ",";
      return s + ")";
    }
  }
  return "?";
}

std::string describe(const AV& v) {
  switch (v->kind) {
    case AK::Error: return "an erroneous value";
    case AK::None: return "none";
    case AK::Node: return v->type->str();
    case AK::Int: return fmt::format("the integer {}", v->i);
    case AK::Float: return fmt::format("the number {}", v->f);
    case AK::Bool: return v->b ? "true" : "false";
    case AK::Str: return fmt::format("the string {:?}", v->s);
    case AK::DType: return fmt::format("the dtype {}", dtype_name(v->dtype));
    case AK::Tuple: return fmt::format("a tuple of {} elements", v->elems.size());
    case AK::Record: return v->record_name.empty() ? "a record" : "a " + v->record_name + " model";
    case AK::Def: return fmt::format("the function '{}'", v->def->name);
    case AK::Closure: return "a lambda";
    case AK::Builtin: return fmt::format("the built-in '{}'", v->s);
    case AK::ModelClass: return fmt::format("the model class '{}'", v->model->name);
    case AK::Namespace: return fmt::format("the module '{}'", v->s);
    case AK::Transform: return fmt::format("{}({})", v->s, describe(v->elems[0]));
    case AK::Pullback: return "a pullback function";
    case AK::Union:
      return fmt::format("a function chosen at run time (one of {})", v->statics.size());
  }
  return "a value";
}

std::string type_text(const AV& v) {
  switch (v->kind) {
    case AK::Int:
      return fmt::format("int {}", v->i);
    case AK::Float:
      return fmt::format("float {}", v->f);
    case AK::Bool:
      return v->b ? "bool true" : "bool false";
    case AK::Str:
      return "str";
    case AK::Record:
      return v->record_name.empty() ? "record" : v->record_name + " model";
    case AK::Tuple: {
      std::string s;
      for (const AV& e : v->elems) s += (s.empty() ? "" : ", ") + type_text(e);
      return "(" + s + ")";
    }
    default:
      return describe(v);
  }
}

const Binding* Env::lookup(const std::string& name) const {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return &f->second;
  }
  return nullptr;
}

Binding* Env::lookup_mutable(const std::string& name) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return &f->second;
  }
  return nullptr;
}

std::shared_ptr<Env> Env::snapshot() const {
  auto e = std::make_shared<Env>();
  e->module = module;
  e->scopes.emplace_back();
  for (const auto& scope : scopes)
    for (const auto& [name, b] : scope) e->scopes.back()[name] = b;
  return e;
}

}  // namespace spora::sem::lower
