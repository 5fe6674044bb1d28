// Run-time values of the reference interpreter: tensors, tuples, records, strings, iterators.
//
// A Tensor is dtype + shape + a shared, 64-byte aligned storage buffer on a Device (contiguous
// row-major: strides() are the row-major ones; strided views are not supported). Copies of a
// Tensor share the buffer (copy-on-write is the writer's job: kernels allocate their outputs, or
// reuse an input buffer in place when unique() says nobody else holds it).
//
// Storage comes from an Allocator (one per device kind). semantics only defines the interface
// and a plain malloc allocator; backends/runtime installs its caching allocator with
// set_allocator (runtime::install). A buffer returns to the allocator that made it when the last
// Tensor sharing it dies (reference counting). LifetimeScope / LongLived is a per-thread hint
// passed to the allocator: buffers made while a LongLived scope is open (parameters, optimizer
// state, graph inputs and outputs, dataset buffers) go to a pool apart from short-lived
// activations.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "semantics/types.h"

namespace spora::sem {

// Where a buffer lives. CPU is the default; cuda:N for the CUDA backend.
struct Device {
  enum class Kind : uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  bool is_cpu() const { return kind == Kind::cpu; }
  std::string str() const;  // "cpu", "cuda:0"
  friend bool operator==(const Device&, const Device&) = default;
};
constexpr size_t kDeviceKinds = 2;

// The allocator's pool hint: how long a buffer is expected to live.
enum class Lifetime : uint8_t { Short, Long };

// Every buffer an Allocator hands out is aligned to this many bytes.
constexpr size_t kBufferAlignment = 64;

// A buffer from an allocator: `size` >= the bytes asked for; `pool` is the allocator's own tag.
struct Block {
  void* ptr = nullptr;
  size_t size = 0;
  uint32_t pool = 0;
};

// What an allocator that cannot get `bytes` from the system throws (a lang::UserError): the
// size asked for and what live tensors hold.
std::string out_of_memory_message(size_t bytes, int64_t live_bytes);

// Where tensor storage comes from. Implementations are thread-safe (the data loader thread
// allocates too) and outlive every buffer they hand out.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // At least `bytes` bytes (a non-null buffer even for 0), aligned to kBufferAlignment,
  // uninitialised. Throws std::bad_alloc when memory is exhausted.
  virtual Block allocate(size_t bytes, Lifetime lifetime) = 0;
  // Gives back a block this allocator returned.
  virtual void deallocate(const Block& block) = 0;
};

// The default CPU allocator: aligned_alloc / free, nothing cached.
Allocator& malloc_allocator();
// Installs `a` for new buffers of a device kind (null: the default; CUDA has none by
// default). Buffers already allocated go back to the allocator that made them.
void set_allocator(Allocator* a, Device::Kind kind = Device::Kind::cpu);
// The allocator new buffers of `kind` come from; InternalError if there is none.
Allocator& allocator(Device::Kind kind = Device::Kind::cpu);

// Reading a buffer of another device from the host: the backend of that device installs a
// copy function (backends/cuda does for cuda tensors), so Tensor::get / item / clone / cast and
// the interpreter's conditions work on any tensor (through a host copy; results on the CPU).
using DeviceToHost = void (*)(void* dst, const void* src, size_t bytes);
void set_device_to_host(Device::Kind kind, DeviceToHost copy);
class Tensor;
// t itself when it is on the CPU, else a host copy (InternalError when no copy is installed).
Tensor host_tensor(const Tensor& t);

// The calling thread's pool hint (Short unless a scope says otherwise).
Lifetime current_lifetime();
// Sets the calling thread's pool hint while alive (scopes nest).
class LifetimeScope {
 public:
  explicit LifetimeScope(Lifetime lifetime);
  ~LifetimeScope();
  LifetimeScope(const LifetimeScope&) = delete;
  LifetimeScope& operator=(const LifetimeScope&) = delete;

 private:
  Lifetime saved_;
};
// `LongLived scope;` around parameter initialisation, optimizer state, dataset buffers...
struct LongLived : LifetimeScope {
  LongLived() : LifetimeScope(Lifetime::Long) {}
};

// One buffer of tensor storage; returns its memory to its allocator when destroyed. Counted
// in memory_stats() while alive.
class Storage {
 public:
  Storage(size_t nbytes, Device device, Lifetime lifetime);  // uninitialised
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  uint8_t* data() { return static_cast<uint8_t*>(block_.ptr); }
  const uint8_t* data() const { return static_cast<const uint8_t*>(block_.ptr); }
  size_t nbytes() const { return nbytes_; }        // as asked for
  size_t capacity() const { return block_.size; }  // as allocated (>= nbytes)
  Device device() const { return device_; }
  Lifetime lifetime() const { return lifetime_; }

 private:
  Block block_;
  size_t nbytes_;
  Device device_;
  Lifetime lifetime_;
  Allocator* allocator_;
};

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised (the memory is not touched); zeros and full fill it.
  static Tensor empty(DType dtype, Shape shape, Device device = Device::cpu());
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor full(DType dtype, Shape shape, double value);
  static Tensor scalar(DType dtype, double value) { return full(dtype, {}, value); }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  TypeP type() const { return Type::tensor(dtype_, shape_); }
  bool defined() const { return static_cast<bool>(storage_); }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  // Row-major strides in elements (tensors are contiguous).
  std::vector<int64_t> strides() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // True when no other Tensor shares this storage (a kernel may then write its result into it).
  bool unique() const { return storage_ && storage_.use_count() == 1; }

  // Typed access to the contiguous buffer (host memory: CPU tensors). T must match dtype
  // (float for f32, double for f64, int32_t, int64_t, bool (stored as uint8_t: use
  // data<uint8_t>()), uint16_t for f16/bf16).
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
  std::shared_ptr<Storage> storage_;
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
// memory, measured by benchmarks: backward memory of loops, @checkpoint). Counts the bytes
// tensors asked for, whatever the allocator rounded them to or keeps cached.
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
