// Types of Spora values, shared by the IR, the interpreter and every later layer.
//
// A Type is immutable and shared (TypeP). Tensor types are fully concrete after
// specialisation: every dim is a known size, or kDynamicDim where a size is only known at
// run time (printed `?`). Scalars are 0-d tensors (`f32`).
//
// Text form (printed by str(), parsed by parse_type in semantics/ir/parser.h):
//   f32[64,784]   f32   i32[?]   (f32, i32[3])   ()   {w: f32[2,1], b: f32[1]}   MLP{w: ..., b: ...}
//   str   iter<(f32[64,784], i32[64])>   fn(f32, i32) -> f32   list<(i32, f32[3])>
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spora {

enum class DType : uint8_t { f16, bf16, f32, f64, i32, i64, boolean };

std::string_view dtype_name(DType t);                    // "f32", "bool", ...
std::optional<DType> parse_dtype(std::string_view name); // inverse of dtype_name
size_t dtype_size(DType t);
inline bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
}
inline bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }

}  // namespace spora

namespace spora::sem {

constexpr int64_t kDynamicDim = -1;
using Shape = std::vector<int64_t>;
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& s);

struct Type;
using TypeP = std::shared_ptr<const Type>;

struct Type {
  enum class Kind {
    Tensor,    // dtype + shape
    Tuple,     // elems
    Record,    // name (model name, may be empty) + field names + elems
    String,    // a compile-time/run-time string (print, file names)
    Iterator,  // a run-time iterator (datasets); elems[0] is the element type (elems[k] that of
               // part k, semantics/iterable.h), name the source
    Function,  // a graph value (control-flow bodies): elems = parameter types, result
    List,      // a run-time list (the tape of a differentiated loop): elems[0] the element type
  };
  Kind kind = Kind::Tensor;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<TypeP> elems;
  std::vector<std::string> names;
  std::string name;
  TypeP result;  // Function

  static TypeP tensor(DType dtype, Shape shape = {});
  static TypeP scalar(DType dtype) { return tensor(dtype, {}); }
  static TypeP tuple(std::vector<TypeP> elems);
  static TypeP unit() { return tuple({}); }
  static TypeP record(std::string name, std::vector<std::string> names, std::vector<TypeP> elems);
  static TypeP string();
  static TypeP iterator(std::string source, TypeP element);
  // An iterator walked in parts, one per element type (semantics/iterable.h); elems not empty.
  static TypeP iterator(std::string source, std::vector<TypeP> elements);
  static TypeP function(std::vector<TypeP> params, TypeP result);
  static TypeP list(TypeP element);

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_scalar() const { return kind == Kind::Tensor && shape.empty(); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Number of elements; -1 if a dim is dynamic.
  int64_t numel() const;
  // Index of a record field, or -1.
  int field_index(std::string_view field) const;

  std::string str() const;
};

bool operator==(const Type& a, const Type& b);
inline bool operator!=(const Type& a, const Type& b) { return !(a == b); }
bool same_type(const TypeP& a, const TypeP& b);  // null-safe structural equality

// "[64,784]"
std::string shape_str(const Shape& s);

}  // namespace spora::sem
