// Types of Spora values: construction, equality and the text form documented in types.h.
#include "semantics/types.h"

#include <array>

#include "lang/diagnostics.h"

namespace spora {

namespace {
constexpr std::array<std::string_view, 7> kDTypeNames = {"f16", "bf16", "f32", "f64",
                                                         "i32", "i64",  "bool"};
}  // namespace

std::string_view dtype_name(DType t) { return kDTypeNames.at(static_cast<size_t>(t)); }

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kDTypeNames.size(); ++i)
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::boolean:
      return 1;
  }
  throw lang::InternalError("dtype_size: unknown dtype");
}

}  // namespace spora

namespace spora::sem {

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t n = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = n;
    n *= s[i];
  }
  return st;
}

TypeP Type::tensor(DType dtype, Shape shape) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::Tensor;
  t->dtype = dtype;
  t->shape = std::move(shape);
  return t;
}

TypeP Type::tuple(std::vector<TypeP> elems) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::Tuple;
  t->elems = std::move(elems);
  return t;
}

TypeP Type::record(std::string name, std::vector<std::string> names, std::vector<TypeP> elems) {
  if (names.size() != elems.size())
    throw lang::InternalError("Type::record: field names and types differ in number");
  auto t = std::make_shared<Type>();
  t->kind = Kind::Record;
  t->name = std::move(name);
  t->names = std::move(names);
  t->elems = std::move(elems);
  return t;
}

TypeP Type::string() {
  auto t = std::make_shared<Type>();
  t->kind = Kind::String;
  return t;
}

TypeP Type::iterator(std::string source, TypeP element) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::Iterator;
  t->name = std::move(source);
  t->elems = {std::move(element)};
  return t;
}

TypeP Type::iterator(std::string source, std::vector<TypeP> elements) {
  if (elements.empty()) throw lang::InternalError("Type::iterator: no element type");
  auto t = std::make_shared<Type>();
  t->kind = Kind::Iterator;
  t->name = std::move(source);
  t->elems = std::move(elements);
  return t;
}

TypeP Type::function(std::vector<TypeP> params, TypeP result) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::Function;
  t->elems = std::move(params);
  t->result = std::move(result);
  return t;
}

TypeP Type::list(TypeP element) {
  auto t = std::make_shared<Type>();
  t->kind = Kind::List;
  t->elems = {std::move(element)};
  return t;
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

int Type::field_index(std::string_view field) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == field) return static_cast<int>(i);
  return -1;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += s[i] == kDynamicDim ? std::string("?") : std::to_string(s[i]);
  }
  return out + "]";
}

namespace {
std::string elem_list(const std::vector<TypeP>& elems) {
  std::string out;
  for (size_t i = 0; i < elems.size(); ++i) {
    if (i) out += ", ";
    out += elems[i] ? elems[i]->str() : "<null>";
  }
  return out;
}
}  // namespace

std::string Type::str() const {
  switch (kind) {
    case Kind::Tensor: {
      std::string out(dtype_name(dtype));
      if (!shape.empty()) out += shape_str(shape);
      return out;
    }
    case Kind::Tuple:
      // A one-element tuple prints Python style, `(f32,)`, to tell it from parentheses.
      return "(" + elem_list(elems) + (elems.size() == 1 ? ",)" : ")");
    case Kind::Record: {
      std::string out = name + "{";
      for (size_t i = 0; i < elems.size(); ++i) {
        if (i) out += ", ";
        out += names[i] + ": " + (elems[i] ? elems[i]->str() : "<null>");
      }
      return out + "}";
    }
    case Kind::String:
      return "str";
    case Kind::Iterator:
      return "iter<" + (elems.empty() ? std::string("?") : elem_list(elems)) + ">";
    case Kind::Function:
      return "fn(" + elem_list(elems) + ") -> " + (result ? result->str() : "()");
    case Kind::List:
      return "list<" + (elems.empty() ? std::string("?") : elem_list(elems)) + ">";
  }
  throw lang::InternalError("Type::str: unknown kind");
}

bool same_type(const TypeP& a, const TypeP& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

namespace {
bool same_elems(const std::vector<TypeP>& a, const std::vector<TypeP>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_type(a[i], b[i])) return false;
  return true;
}
}  // namespace

bool operator==(const Type& a, const Type& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Type::Kind::Tensor:
      return a.dtype == b.dtype && a.shape == b.shape;
    case Type::Kind::Tuple:
      return same_elems(a.elems, b.elems);
    case Type::Kind::Record:
      return a.name == b.name && a.names == b.names && same_elems(a.elems, b.elems);
    case Type::Kind::String:
      return true;
    case Type::Kind::Iterator:
      return a.name == b.name && same_elems(a.elems, b.elems);
    case Type::Kind::Function:
      return same_elems(a.elems, b.elems) && same_type(a.result, b.result);
    case Type::Kind::List:
      return same_elems(a.elems, b.elems);
  }
  return false;
}

}  // namespace spora::sem
