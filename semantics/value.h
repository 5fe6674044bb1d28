// Run-time values of the reference interpreter: tensors, tuples, records, strings, iterators.
//
// A Tensor here is the interpreter's own: contiguous row-major storage, shared by copies
// (copy-on-write is the writer's job: kernels always allocate their outputs). It is the
// oracle's data structure; backends/runtime has the fast, strided one.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "semantics/types.h"

namespace spora::sem {

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(DType dtype, Shape shape);   // uninitialised
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor full(DType dtype, Shape shape, double value);
  static Tensor scalar(DType dtype, double value) { return full(dtype, {}, value); }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  TypeP type() const { return Type::tensor(dtype_, shape_); }
  bool defined() const { return static_cast<bool>(storage_); }
  // True when no other Tensor shares this storage (a kernel may then write its result into it).
  bool unique() const { return storage_ && storage_.use_count() == 1; }

  // Typed access to the contiguous buffer. T must match dtype (float for f32, double for f64,
  // int32_t, int64_t, bool (stored as uint8_t: use data<uint8_t>()), uint16_t for f16/bf16).
  template <class T> T* data() { return reinterpret_cast<T*>(storage_->data()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(storage_->data()); }
  void* raw() { return storage_ ? storage_->data() : nullptr; }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // Element i (row-major flat index) converted to/from double, whatever the dtype.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  // The single element of a 1-element tensor as double.
  double item() const;

  Tensor reshaped(Shape shape) const;  // shares storage; numel must match
  Tensor cast(DType dtype) const;
  Tensor clone() const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::vector<uint8_t>> storage_;
};

// A run-time object the IR only passes around (dataset iterators, ...).
struct Opaque {
  virtual ~Opaque() = default;
  virtual std::string describe() const = 0;
};

struct Value {
  enum class Kind { None, Tensor, Tuple, Record, String, Opaque };
  Kind kind = Kind::None;
  Tensor tensor;
  std::shared_ptr<std::vector<Value>> elems;   // Tuple and Record (field values)
  TypeP record_type;                           // Record: the Type (name + field names)
  std::string str;                             // String
  std::shared_ptr<Opaque> opaque;

  Value() = default;
  Value(Tensor t) : kind(Kind::Tensor), tensor(std::move(t)) {}  // NOLINT: implicit by design
  static Value tuple(std::vector<Value> elems);
  static Value record(TypeP type, std::vector<Value> fields);
  static Value string(std::string s);

  bool is_tensor() const { return kind == Kind::Tensor; }
  const std::vector<Value>& items() const { return *elems; }
  // The type of this value (recursively).
  TypeP type() const;
};

// Bytes of tensor storage alive now and at the peak since the last reset (the interpreter's
// memory, measured by benchmarks: backward memory of loops, @checkpoint).
struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
};
MemoryStats memory_stats();
void reset_peak_memory();

// NumPy-like text of a value, as `print` shows it: scalars as numbers (integers without a
// decimal point; floats as Python's repr of the value in its own precision: the shortest
// digits that round-trip to the f32 (f64) value, at least one decimal, scientific below 1e-4
// and from 1e16: `1.0`, `0.2447285`, `1e-08`, `nan`, `-inf`), tensors as nested brackets on
// one line (`[[1.0, 2.0], [3.0, 4.0]]`), big tensors summarised with `...` (more than 1000
// elements: 3 at each edge of every axis), tuples `(a, b)` (one element: `(a,)`), records
// `Name{w: ..., b: ...}`, strings as their raw text, booleans `true`/`false`.
std::string format_value(const Value& v);
// Helpers of format_value: one float (single: shortest digits of its f32 rounding), and
// element i of a tensor in its dtype's form.
std::string format_float(double v, bool single);
std::string format_scalar(const Tensor& t, int64_t i);

}  // namespace spora::sem
