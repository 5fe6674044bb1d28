// idx reading and writing (see idx.h).
#include "backends/runtime/data/idx.h"

#include <bit>
#include <cstring>

#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

static_assert(std::endian::native == std::endian::little, "idx writing assumes a little-endian host");

std::string fmt_hex(uint8_t v) {
  const char* digits = "0123456789abcdef";
  return {digits[v >> 4], digits[v & 15]};
}

const char* type_name(uint8_t type) {
  switch (type) {
    case 0x08: return "u8";
    case 0x09: return "i8";
    case 0x0B: return "i16";
    case 0x0C: return "i32";
    case 0x0D: return "f32";
    case 0x0E: return "f64";
    default: return nullptr;
  }
}

// Element i of big-endian idx data as double.
double element(const uint8_t* p, uint8_t type, int64_t i) {
  switch (type) {
    case 0x08: return p[i];
    case 0x09: return static_cast<int8_t>(p[i]);
    case 0x0B: {
      const uint8_t* q = p + 2 * i;
      return static_cast<int16_t>(static_cast<uint16_t>((q[0] << 8) | q[1]));
    }
    case 0x0C: return static_cast<int32_t>(load_be32(p + 4 * i));
    case 0x0D: {
      const uint32_t bits = load_be32(p + 4 * i);
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case 0x0E: {
      const uint64_t bits = (uint64_t{load_be32(p + 8 * i)} << 32) | load_be32(p + 8 * i + 4);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    default: return 0;
  }
}

}  // namespace

size_t IdxHeader::elem_size() const {
  switch (type) {
    case 0x0B: return 2;
    case 0x0C:
    case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 1;
  }
}

DType IdxHeader::dtype() const {
  if (type == 0x0D) return DType::f32;
  if (type == 0x0E) return DType::f64;
  return DType::i32;
}

std::string IdxHeader::str() const {
  const char* n = type_name(type);
  return std::string(n ? n : "?") + sem::shape_str(shape);
}

IdxHeader parse_idx_header(const Bytes& b, const std::string& path, bool gz) {
  const std::string what = "'" + path + "' is not an idx file ";
  if (b.size() < 4)
    fail("'" + path + "' is truncated " + at_byte(b.size(), gz) +
         ": an idx header has at least 4 bytes");
  if (b[0] != 0 || b[1] != 0)
    fail(what + at_byte(b[0] != 0 ? 0 : 1, gz) + ": it does not start with two zero bytes (0x" +
         fmt_hex(b[0]) + " 0x" + fmt_hex(b[1]) + ")");
  IdxHeader h;
  h.gz = gz;
  h.type = b[2];
  if (!type_name(h.type))
    fail(what + at_byte(2, gz) + ": unknown element type 0x" + fmt_hex(h.type));
  const size_t ndim = b[3];
  if (ndim == 0) fail(what + at_byte(3, gz) + ": it has no dimensions");
  h.data_offset = 4 + 4 * ndim;
  if (b.size() < h.data_offset)
    fail("'" + path + "' is truncated " + at_byte(b.size(), gz) + ": its idx header of " +
         std::to_string(ndim) + " dimensions has " + std::to_string(h.data_offset) + " bytes");
  for (size_t d = 0; d < ndim; ++d) {
    const uint32_t n = load_be32(b.data() + 4 + 4 * d);
    if (n > (1u << 31))
      fail(what + at_byte(4 + 4 * d, gz) + ": dimension " + std::to_string(d) + " is " +
           std::to_string(n));
    h.shape.push_back(n);
  }
  return h;
}

IdxHeader read_idx_header(const std::string& path) {
  // The dim count is byte 3; 4 + 4 * 255 bytes cover every header.
  bool gz = false;
  const Bytes head = read_prefix(path, 4 + 4 * 255, &gz);
  return parse_idx_header(head, path, gz);
}

namespace {
// The whole file, header parsed and the size checked against it.
Bytes read_checked(const std::string& path, IdxHeader& h) {
  bool gz = false;
  Bytes b = read_file(path, true, &gz);
  h = parse_idx_header(b, path, gz);
  announced_bytes(b.size(), h.data_offset, h.shape, h.elem_size(), path, h.str(), gz);
  return b;
}
}  // namespace

sem::Tensor read_idx(const std::string& path, std::optional<DType> dtype) {
  IdxHeader h;
  Bytes b = read_checked(path, h);
  const DType dt = dtype.value_or(h.dtype());
  sem::Tensor t = sem::Tensor::empty(dt, h.shape);
  const uint8_t* p = b.data() + h.data_offset;
  const int64_t n = t.numel();
  if (dt == DType::f32 && h.type == 0x08) {
    float* out = t.data<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    for (int64_t i = 0; i < n; ++i) t.set(i, element(p, h.type, i));
  }
  return t;
}

Bytes read_idx_u8(const std::string& path, IdxHeader& h) {
  Bytes b = read_checked(path, h);
  if (h.type != 0x08) fail("'" + path + "' holds " + h.str() + ", expected unsigned bytes (u8)");
  b.erase(b.begin(), b.begin() + static_cast<long>(h.data_offset));
  return b;
}

std::string idx_bytes(const sem::Tensor& t, const std::string& path) {
  uint8_t type = 0;
  switch (t.dtype()) {
    case DType::f32: type = 0x0D; break;
    case DType::f64: type = 0x0E; break;
    case DType::i32: type = 0x0C; break;
    case DType::boolean: type = 0x08; break;
    default:
      fail("cannot write '" + path + "': the idx format has no " + std::string(dtype_name(t.dtype())) +
           " type (it has u8, i8, i16, i32, f32, f64; save_npy keeps every dtype)");
  }
  if (t.rank() == 0 || t.rank() > 255)
    fail("cannot write '" + path + "': idx needs 1 to 255 dimensions, " + t.type()->str() + " has " +
         std::to_string(t.rank()));
  std::string out(4 + 4 * static_cast<size_t>(t.rank()), '\0');
  auto* h = reinterpret_cast<uint8_t*>(out.data());
  h[2] = type;
  h[3] = static_cast<uint8_t>(t.rank());
  for (int64_t d = 0; d < t.rank(); ++d) store_be32(h + 4 + 4 * d, static_cast<uint32_t>(t.shape()[d]));
  const size_t esize = type == 0x08 ? 1 : type == 0x0E ? 8 : 4;
  const size_t at = out.size();
  out.resize(at + esize * static_cast<size_t>(t.numel()));
  auto* p = reinterpret_cast<uint8_t*>(out.data()) + at;
  const auto* src = static_cast<const uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    // Little-endian host bytes reversed into big-endian.
    for (size_t k = 0; k < esize; ++k) p[i * esize + k] = src[i * esize + (esize - 1 - k)];
  }
  return out;
}

void write_idx(const sem::Tensor& t, const std::string& path) { write_file_atomic(path, idx_bytes(t, path)); }

}  // namespace spora::runtime::data
