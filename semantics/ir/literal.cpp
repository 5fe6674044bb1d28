// Typed values of IR literals (see literal.h).
#include "semantics/ir/literal.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace spora::ir::text {

namespace {

[[noreturn]] void fail(const Lit& at, const std::string& message) {
  throw ParseError(at.range, message);
}

std::string shown(const Lit& lit) {
  switch (lit.kind) {
    case Lit::Kind::Number:
    case Lit::Kind::Word:
      return lit.text;
    case Lit::Kind::String:
      return "a string";
    case Lit::Kind::List:
      return "a list";
    case Lit::Kind::Tuple:
      return "a tuple";
  }
  return "?";
}

std::optional<int64_t> as_int(const Lit& lit) {
  if (lit.kind != Lit::Kind::Number || lit.is_float) return std::nullopt;
  int64_t v = 0;
  const char* b = lit.text.data();
  const char* e = b + lit.text.size();
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

// The value of a float literal in type T (float or double), exact for shortest-digit text.
template <class T>
std::optional<T> as_float(const Lit& lit) {
  if (lit.kind == Lit::Kind::Word) {
    if (lit.text == "inf") return std::numeric_limits<T>::infinity();
    if (lit.text == "-inf") return -std::numeric_limits<T>::infinity();
    if (lit.text == "nan" || lit.text == "-nan") return std::numeric_limits<T>::quiet_NaN();
    return std::nullopt;
  }
  if (lit.kind != Lit::Kind::Number) return std::nullopt;
  T v{};
  const char* b = lit.text.data();
  const char* e = b + lit.text.size();
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

std::optional<bool> as_bool(const Lit& lit) {
  if (lit.kind != Lit::Kind::Word) return std::nullopt;
  if (lit.text == "true") return true;
  if (lit.text == "false") return false;
  return std::nullopt;
}

// Flattens nested lists, checking they are rectangular; returns the leaves.
void flatten(const Lit& lit, size_t depth, sem::Shape& shape, std::vector<const Lit*>& leaves) {
  if (lit.kind != Lit::Kind::List) {
    if (depth < shape.size()) fail(lit, "ragged tensor literal: expected a list here");
    leaves.push_back(&lit);
    return;
  }
  if (depth == shape.size()) {
    if (!leaves.empty()) fail(lit, "ragged tensor literal: expected a number here");
    shape.push_back(static_cast<int64_t>(lit.elems.size()));
  } else if (shape[depth] != static_cast<int64_t>(lit.elems.size()))
    fail(lit, "ragged tensor literal: " + std::to_string(lit.elems.size()) + " elements where " +
                  std::to_string(shape[depth]) + " were expected");
  for (const Lit& e : lit.elems) flatten(e, depth + 1, shape, leaves);
}

void set_element(sem::Tensor& t, int64_t i, const Lit& lit) {
  switch (t.dtype()) {
    case DType::f64: {
      auto v = as_float<double>(lit);
      if (!v) fail(lit, "expected an f64 number, found " + shown(lit));
      t.data<double>()[i] = *v;
      return;
    }
    case DType::f32:
    case DType::f16:
    case DType::bf16: {
      auto v = as_float<float>(lit);
      if (!v)
        fail(lit,
             "expected a " + std::string(dtype_name(t.dtype())) + " number, found " + shown(lit));
      t.set(i, static_cast<double>(*v));
      return;
    }
    case DType::i32:
    case DType::i64: {
      auto v = as_int(lit);
      if (!v) fail(lit, "expected an integer, found " + shown(lit));
      if (t.dtype() == DType::i32) {
        if (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())
          fail(lit, lit.text + " does not fit in i32");
        t.data<int32_t>()[i] = static_cast<int32_t>(*v);
      } else {
        t.data<int64_t>()[i] = *v;
      }
      return;
    }
    case DType::boolean: {
      auto v = as_bool(lit);
      if (!v) fail(lit, "expected true or false, found " + shown(lit));
      t.data<uint8_t>()[i] = *v ? 1 : 0;
      return;
    }
  }
}

sem::Value tensor_value(const Lit& lit, const sem::Type& type) {
  for (int64_t d : type.shape)
    if (d < 0) fail(lit, "a constant needs a static shape, not " + type.str());
  sem::Shape shape;
  std::vector<const Lit*> leaves;
  flatten(lit, 0, shape, leaves);
  bool empty_ok = type.numel() == 0 && leaves.empty();
  if (shape != type.shape && !empty_ok)
    fail(lit, "the literal has shape " + sem::shape_str(shape) + " but the type is " + type.str());
  sem::Tensor t = sem::Tensor::zeros(type.dtype, type.shape);
  for (size_t i = 0; i < leaves.size(); ++i) set_element(t, static_cast<int64_t>(i), *leaves[i]);
  return t;
}

sem::Attr any_attr(const Lit& lit) {
  if (auto i = as_int(lit)) return *i;
  if (lit.kind == Lit::Kind::Number) {
    if (auto f = as_float<double>(lit)) return *f;
  }
  if (auto b = as_bool(lit)) return *b;
  if (lit.kind == Lit::Kind::String) return lit.text;
  if (lit.kind == Lit::Kind::Word) {
    if (lit.text == "none") return std::monostate{};
    if (auto d = parse_dtype(lit.text)) return *d;
    if (auto f = as_float<double>(lit)) return *f;
  }
  if (lit.kind == Lit::Kind::List) {
    std::vector<int64_t> v;
    for (const Lit& e : lit.elems) {
      auto i = as_int(e);
      if (!i) fail(e, "expected an integer, found " + shown(e));
      v.push_back(*i);
    }
    return v;
  }
  fail(lit, "not an attribute value: " + shown(lit));
}

}  // namespace

sem::Value literal_value(const Lit& lit, const sem::TypeP& type) {
  switch (type->kind) {
    case sem::Type::Kind::Tensor:
      return tensor_value(lit, *type);
    case sem::Type::Kind::String:
      if (lit.kind != Lit::Kind::String) fail(lit, "expected a string, found " + shown(lit));
      return sem::Value::string(lit.text);
    case sem::Type::Kind::Tuple:
    case sem::Type::Kind::Record: {
      if (lit.kind != Lit::Kind::Tuple || lit.elems.size() != type->elems.size())
        fail(lit, "expected a tuple of " + std::to_string(type->elems.size()) + " values for " +
                      type->str());
      std::vector<sem::Value> elems;
      for (size_t i = 0; i < lit.elems.size(); ++i)
        elems.push_back(literal_value(lit.elems[i], type->elems[i]));
      if (type->kind == sem::Type::Kind::Record) return sem::Value::record(type, std::move(elems));
      return sem::Value::tuple(std::move(elems));
    }
    default:
      fail(lit, "cannot write a constant of type " + type->str());
  }
}

sem::Attr attr_value(const sem::Primitive& prim, const std::string& name, const Lit& lit,
                     lang::SourceRange name_range) {
  using AK = sem::ParamSpec::AttrKind;
  const sem::ParamSpec* spec = nullptr;
  for (const sem::ParamSpec& p : prim.params)
    if ((p.kind == sem::ParamSpec::Kind::Attr || p.kind == sem::ParamSpec::Kind::Kwargs) && p.name == name)
      spec = &p;
  if (!spec) {
    if (!prim.params.empty())
      throw ParseError(name_range, prim.name + " has no attribute '" + name + "'");
    return any_attr(lit);
  }
  auto bad = [&](const char* what) -> sem::Attr {
    fail(lit,
         "attribute '" + name + "' of " + prim.name + " expects " + what + ", found " + shown(lit));
  };
  bool is_none = lit.kind == Lit::Kind::Word && lit.text == "none";
  switch (spec->attr_kind) {
    case AK::Any:
      return any_attr(lit);
    case AK::Int:
      if (auto i = as_int(lit)) return *i;
      if (is_none) {  // an attribute given at run time, as the last input (semantics/lower/call.cpp)
        const auto* run_time = prim.facet<std::vector<std::string>>("run_time_attrs");
        if (run_time && std::find(run_time->begin(), run_time->end(), name) != run_time->end())
          return std::monostate{};
      }
      return bad("an integer");
    case AK::IntOrNone:
      if (is_none) return std::monostate{};
      if (auto i = as_int(lit)) return *i;
      return bad("an integer or none");
    case AK::Float:
      if (auto f = as_float<double>(lit)) return *f;
      return bad("a number");
    case AK::Bool:
      if (auto b = as_bool(lit)) return *b;
      return bad("true or false");
    case AK::String:
      if (lit.kind == Lit::Kind::String) return lit.text;
      return bad("a string");
    case AK::DType:
      if (lit.kind == Lit::Kind::Word)
        if (auto d = parse_dtype(lit.text)) return *d;
      return bad("a dtype");
    case AK::Ints:
    case AK::IntsOrNone:
      if (is_none && spec->attr_kind == AK::IntsOrNone) return std::monostate{};
      if (lit.kind != Lit::Kind::List) return bad("a list of integers");
      return any_attr(lit);
  }
  return bad("a value");
}

}  // namespace spora::ir::text
