// Run-time values of the reference interpreter and their NumPy-like text (value.h).
#include "semantics/value.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

#include "lang/diagnostics.h"
#include "semantics/half.h"

namespace spora::sem {

namespace {

// A double stored in an integer element: truncated toward zero (NumPy astype), NaN as 0 and
// out-of-range values clamped to the type's range instead of being undefined behaviour.
template <class T>
T to_integer(double v) {
  if (std::isnan(v)) return 0;
  // The largest double below 2^31 is 2^31 - 1 itself; below 2^63 it is 2^63 - 1024.
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = sizeof(T) == 4 ? 2147483647.0 : 9223372036854774784.0;
  return static_cast<T>(std::trunc(std::fmin(std::fmax(v, lo), hi)));
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw lang::InternalError("Tensor: a run-time tensor cannot have a dynamic dim");
    n *= d;
  }
  return n;
}

}  // namespace

namespace {
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

}  // namespace

std::string out_of_memory_message(size_t bytes, int64_t live_bytes) {
  auto gb = [](double b) {
    static const std::pair<double, const char*> units[] = {{1e15, "PB"}, {1e12, "TB"}, {1e9, "GB"}};
    char buf[32];
    for (const auto& [scale, unit] : units)
      if (b >= scale) {
        std::snprintf(buf, sizeof buf, "%.2f %s", b / scale, unit);
        return std::string(buf);
      }
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    return std::string(buf);
  };
  return "out of memory: a tensor buffer of " + gb(static_cast<double>(bytes)) +
         " could not be allocated (" + gb(static_cast<double>(live_bytes)) +
         " held by live tensors); use smaller shapes or batches";
}

namespace {

// aligned_alloc / free; never cached.
class MallocAllocator final : public Allocator {
 public:
  Block allocate(size_t bytes, Lifetime) override {
    const size_t size = (std::max<size_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    void* p = std::aligned_alloc(kBufferAlignment, size);
    if (!p) throw lang::UserError(out_of_memory_message(size, g_live_bytes.load()));
    return Block{p, size, 0};
  }
  void deallocate(const Block& block) override { std::free(block.ptr); }
};

std::atomic<Allocator*> g_allocators[kDeviceKinds] = {};
std::atomic<DeviceToHost> g_to_host[kDeviceKinds] = {};
thread_local Lifetime t_lifetime = Lifetime::Short;
}  // namespace

std::string Device::str() const {
  return kind == Kind::cpu ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Allocator& malloc_allocator() {
  static MallocAllocator* a = new MallocAllocator();  // never destroyed: buffers may outlive main
  return *a;
}

void set_allocator(Allocator* a, Device::Kind kind) { g_allocators[static_cast<size_t>(kind)].store(a); }

Allocator& allocator(Device::Kind kind) {
  if (Allocator* a = g_allocators[static_cast<size_t>(kind)].load()) return *a;
  if (kind == Device::Kind::cpu) return malloc_allocator();
  throw lang::InternalError("no allocator is installed for " + Device{kind, 0}.str() + " tensors");
}

void set_device_to_host(Device::Kind kind, DeviceToHost copy) {
  g_to_host[static_cast<size_t>(kind)].store(copy);
}

Tensor host_tensor(const Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return t;
  DeviceToHost copy = g_to_host[static_cast<size_t>(t.device().kind)].load();
  if (!copy)
    throw lang::InternalError("no host copy is installed for " + t.device().str() + " tensors");
  Tensor h = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes()) copy(h.raw(), t.raw(), t.nbytes());
  return h;
}

Lifetime current_lifetime() { return t_lifetime; }
LifetimeScope::LifetimeScope(Lifetime lifetime) : saved_(t_lifetime) { t_lifetime = lifetime; }
LifetimeScope::~LifetimeScope() { t_lifetime = saved_; }

Storage::Storage(size_t nbytes, Device device, Lifetime lifetime)
    : nbytes_(nbytes), device_(device), lifetime_(lifetime), allocator_(&allocator(device.kind)) {
  block_ = allocator_->allocate(nbytes, lifetime);
  const int64_t n = static_cast<int64_t>(nbytes);
  const int64_t now = g_live_bytes.fetch_add(n) + n;
  int64_t peak = g_peak_bytes.load();
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

Storage::~Storage() {
  g_live_bytes.fetch_sub(static_cast<int64_t>(nbytes_));
  allocator_->deallocate(block_);
}

MemoryStats memory_stats() { return MemoryStats{g_live_bytes.load(), g_peak_bytes.load()}; }
void reset_peak_memory() { g_peak_bytes.store(g_live_bytes.load()); }

Tensor Tensor::empty(DType dtype, Shape shape, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.storage_ = std::make_shared<Storage>(t.nbytes(), device, current_lifetime());
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.nbytes()) std::memset(t.raw(), 0, t.nbytes());
  return t;
}

namespace {
template <class T>
void fill_as(Tensor& t, T v) {
  std::fill_n(t.data<T>(), t.numel(), v);
}
}  // namespace

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.numel_ == 0) return t;
  switch (dtype) {
    case DType::f32:
      fill_as(t, static_cast<float>(value));
      break;
    case DType::f64:
      fill_as(t, value);
      break;
    default: {  // the conversions of set(), once
      t.set(0, value);
      const size_t width = dtype_size(dtype);
      for (int64_t i = 1; i < t.numel_; ++i)
        std::memcpy(t.data<uint8_t>() + static_cast<size_t>(i) * width, t.data<uint8_t>(), width);
    }
  }
  return t;
}

std::vector<int64_t> Tensor::strides() const { return row_major_strides(shape_); }

double Tensor::get(int64_t i) const {
  if (!device().is_cpu()) return host_tensor(*this).get(i);
  const uint8_t* p = storage_->data();
  switch (dtype_) {
    case DType::f16:
      return half::f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return half::bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::f32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::f64:
      return reinterpret_cast<const double*>(p)[i];
    case DType::i32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::boolean:
      return p[i] ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  if (!device().is_cpu())
    throw lang::InternalError("Tensor::set on a " + device().str() + " tensor (host memory only)");
  uint8_t* p = storage_->data();
  switch (dtype_) {
    case DType::f16:
      reinterpret_cast<uint16_t*>(p)[i] = half::f64_to_f16(v);  // one rounding from double
      break;
    case DType::bf16:
      reinterpret_cast<uint16_t*>(p)[i] = half::f64_to_bf16(v);
      break;
    case DType::f32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::f64:
      reinterpret_cast<double*>(p)[i] = v;
      break;
    case DType::i32:
      reinterpret_cast<int32_t*>(p)[i] = to_integer<int32_t>(v);
      break;
    case DType::i64:
      reinterpret_cast<int64_t*>(p)[i] = to_integer<int64_t>(v);
      break;
    case DType::boolean:
      p[i] = v != 0.0 ? 1 : 0;
      break;
  }
}

double Tensor::item() const {
  if (numel_ != 1)
    throw lang::UserError("only a one-element tensor can be used as a number, got " +
                          type()->str());
  return get(0);
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_)
    throw lang::InternalError("Tensor::reshaped: cannot reshape " + type()->str() + " to " +
                              shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::cast(DType dtype) const {
  if (!device().is_cpu()) return host_tensor(*this).cast(dtype);
  Tensor t = empty(dtype, shape_);
  // Exact paths for the integer types (a double cannot hold every i64).
  if (dtype_ == DType::i64 && dtype == DType::i64) {
    if (numel_) std::memcpy(t.raw(), raw(), nbytes());
  } else if (dtype_ == DType::i64 && dtype == DType::i32) {
    for (int64_t i = 0; i < numel_; ++i)
      t.data<int32_t>()[i] = static_cast<int32_t>(data<int64_t>()[i]);
  } else if (dtype_ == DType::i64 && dtype == DType::boolean) {
    for (int64_t i = 0; i < numel_; ++i) t.data<uint8_t>()[i] = data<int64_t>()[i] != 0;
  } else if (dtype == DType::i64 && dtype_ == DType::i32) {
    for (int64_t i = 0; i < numel_; ++i) t.data<int64_t>()[i] = data<int32_t>()[i];
  } else {
    // Float -> int truncates toward zero, NaN and out-of-range values clamped (set does).
    for (int64_t i = 0; i < numel_; ++i) t.set(i, get(i));
  }
  return t;
}

Tensor Tensor::clone() const {
  if (!device().is_cpu()) return host_tensor(*this);  // a fresh copy already
  Tensor t = empty(dtype_, shape_);
  if (numel_) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Value Value::tuple(std::vector<Value> elems) {
  Value v;
  v.kind = Kind::Tuple;
  v.elems = std::make_shared<std::vector<Value>>(std::move(elems));
  return v;
}

Value Value::record(TypeP type, std::vector<Value> fields) {
  Value v;
  v.kind = Kind::Record;
  v.record_type = std::move(type);
  v.elems = std::make_shared<std::vector<Value>>(std::move(fields));
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind = Kind::String;
  v.str = std::move(s);
  return v;
}

TypeP Value::type() const {
  switch (kind) {
    case Kind::None:
      return Type::unit();
    case Kind::Tensor:
      return tensor.type();
    case Kind::Tuple: {
      std::vector<TypeP> ts;
      for (const Value& e : *elems) ts.push_back(e.type());
      return Type::tuple(std::move(ts));
    }
    case Kind::Record: {
      std::vector<TypeP> ts;
      for (const Value& e : *elems) ts.push_back(e.type());
      return Type::record(record_type ? record_type->name : "",
                          record_type ? record_type->names : std::vector<std::string>{},
                          std::move(ts));
    }
    case Kind::String:
      return Type::string();
    case Kind::Opaque:
      return Type::iterator(opaque ? opaque->describe() : "", Type::unit());
  }
  return Type::unit();
}

// ---- text -----------------------------------------------------------------------------------

std::string format_float(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits of the value in its own precision, as d.ddddde[+-]xx.
  char buf[64];
  std::to_chars_result r =
      single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v),
                             std::chars_format::scientific)
             : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  int exp = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  std::string out;
  if (exp < -4 || exp >= 16) {  // Python repr: scientific, `1e-08`, `1.5e+20`
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    size_t int_len = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return neg ? "-" + out : out;
}

std::string format_scalar(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::boolean:
      return t.data<uint8_t>()[i] ? "true" : "false";
    case DType::i32:
      return std::to_string(t.data<int32_t>()[i]);
    case DType::i64:
      return std::to_string(t.data<int64_t>()[i]);
    case DType::f64:
      return format_float(t.data<double>()[i], false);
    default:
      return format_float(t.get(i), true);
  }
}

namespace {

constexpr int64_t kSummariseAbove = 1000;
constexpr int64_t kEdgeItems = 3;

void format_tensor(const Tensor& t, size_t axis, int64_t offset,
                   const std::vector<int64_t>& strides, bool summarise, std::string& out) {
  if (axis == t.shape().size()) {
    out += format_scalar(t, offset);
    return;
  }
  int64_t n = t.shape()[axis];
  out += "[";
  bool cut = summarise && n > 2 * kEdgeItems;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      out += "..., ";
      i = n - kEdgeItems;
    }
    format_tensor(t, axis + 1, offset + i * strides[axis], strides, summarise, out);
    if (i + 1 < n) out += ", ";
  }
  out += "]";
}

}  // namespace

std::string format_value(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      return "none";
    case Value::Kind::Tensor: {
      const Tensor& t = v.tensor;
      if (!t.defined()) return "<undefined>";
      std::vector<int64_t> strides(t.shape().size());
      int64_t s = 1;
      for (size_t i = t.shape().size(); i-- > 0;) {
        strides[i] = s;
        s *= t.shape()[i];
      }
      std::string out;
      format_tensor(t, 0, 0, strides, t.numel() > kSummariseAbove, out);
      return out;
    }
    case Value::Kind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < v.elems->size(); ++i) {
        if (i) out += ", ";
        out += format_value((*v.elems)[i]);
      }
      return out + (v.elems->size() == 1 ? ",)" : ")");
    }
    case Value::Kind::Record: {
      std::string out = (v.record_type ? v.record_type->name : std::string()) + "{";
      for (size_t i = 0; i < v.elems->size(); ++i) {
        if (i) out += ", ";
        if (v.record_type && i < v.record_type->names.size()) out += v.record_type->names[i] + ": ";
        out += format_value((*v.elems)[i]);
      }
      return out + "}";
    }
    case Value::Kind::String:
      return v.str;
    case Value::Kind::Opaque:
      return v.opaque ? "<" + v.opaque->describe() + ">" : "<opaque>";
  }
  return "";
}

}  // namespace spora::sem
