// .npy reading and writing (see npy.h).
#include "backends/runtime/data/npy.h"

#include <bit>
#include <cctype>
#include <cstring>

#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

static_assert(std::endian::native == std::endian::little, "npy reading assumes a little-endian host");

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

constexpr char kMagic[] = "\x93NUMPY";

// Header text as an error quotes it: bytes outside printable ASCII as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[u >> 4];
      out += digits[u & 15];
    }
  }
  return out;
}

// Where errors in a header point: the file, whether it was gzip, and the file offset of the
// header dict's first byte.
struct Where {
  const std::string& path;
  bool gz;
  size_t dict_start;
  std::string at(size_t dict_offset) const { return at_byte(dict_start + dict_offset, gz); }
  [[noreturn]] void invalid(size_t dict_offset, const std::string& why) const {
    fail("'" + path + "' is not a valid npy file " + at(dict_offset) + ": " + why);
  }
};

// The value text after `'key':` in the header dict, up to the matching end (a quoted string,
// a parenthesised tuple or a word); *offset is where it starts in the dict.
std::string dict_value(const std::string& dict, const std::string& key, const Where& w,
                       size_t* offset) {
  size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos) at = dict.find("\"" + key + "\"");
  if (at == std::string::npos) w.invalid(0, "its header has no '" + key + "'");
  const size_t key_at = at;
  at = dict.find(':', at);
  if (at == std::string::npos) w.invalid(key_at, "malformed header ('" + key + "' without ':')");
  ++at;
  while (at < dict.size() && std::isspace(static_cast<unsigned char>(dict[at]))) ++at;
  if (at >= dict.size()) w.invalid(key_at, "malformed header ('" + key + "' without a value)");
  *offset = at;
  const char open = dict[at];
  size_t end;
  if (open == '\'' || open == '"') {
    end = dict.find(open, at + 1);
    if (end == std::string::npos) w.invalid(at, "malformed header (an unterminated string)");
    *offset = at + 1;
    return dict.substr(at + 1, end - at - 1);
  }
  if (open == '(') {
    end = dict.find(')', at);
    if (end == std::string::npos) w.invalid(at, "malformed header (a tuple without ')')");
    return dict.substr(at, end - at + 1);
  }
  end = at;
  while (end < dict.size() && (std::isalnum(static_cast<unsigned char>(dict[end])) || dict[end] == '_')) ++end;
  return dict.substr(at, end - at);
}

struct DescrInfo {
  DType dtype;
  size_t size;
};

DescrInfo descr_info(const std::string& descr, const std::string& path, const std::string& at) {
  if (descr.size() >= 3) {
    const std::string code = descr.substr(1);
    if (code == "f2") return {DType::f16, 2};
    if (code == "f4") return {DType::f32, 4};
    if (code == "f8") return {DType::f64, 8};
    if (code == "i4") return {DType::i32, 4};
    if (code == "i8") return {DType::i64, 8};
    if (code == "b1") return {DType::boolean, 1};
    if (code == "u1" || code == "i1") return {DType::i32, 1};
    if (code == "u2" || code == "i2") return {DType::i32, 2};
    if (code == "u4") return {DType::i64, 4};
  }
  fail("'" + path + "' holds npy dtype '" + printable(descr) + "' " + at +
       ", which Spora cannot load (it loads f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 b1)");
}

// Element i of the file's data (little-endian after swapping) stored into t at flat index j.
void convert(const uint8_t* src, const NpyHeader& h, sem::Tensor& t, int64_t i, int64_t j) {
  uint8_t buf[8];
  const size_t n = h.elem_size;
  std::memcpy(buf, src + static_cast<size_t>(i) * n, n);
  if (h.descr[0] == '>')
    for (size_t k = 0; k < n / 2; ++k) std::swap(buf[k], buf[n - 1 - k]);
  const std::string code = h.descr.substr(1);
  auto* dst = static_cast<uint8_t*>(t.raw());
  if (code == "u1") {
    t.data<int32_t>()[j] = buf[0];
  } else if (code == "i1") {
    t.data<int32_t>()[j] = static_cast<int8_t>(buf[0]);
  } else if (code == "u2" || code == "i2") {
    uint16_t v;
    std::memcpy(&v, buf, 2);
    t.data<int32_t>()[j] = code == "u2" ? static_cast<int32_t>(v) : static_cast<int16_t>(v);
  } else if (code == "u4") {
    uint32_t v;
    std::memcpy(&v, buf, 4);
    t.data<int64_t>()[j] = v;
  } else if (code == "b1") {
    dst[j] = buf[0] != 0;
  } else {
    std::memcpy(dst + static_cast<size_t>(j) * n, buf, n);
  }
}

}  // namespace

std::string NpyHeader::str() const { return std::string(dtype_name(dtype)) + sem::shape_str(shape); }

NpyHeader parse_npy_header(const Bytes& b, const std::string& path, bool gz) {
  if (b.size() < 6 || std::memcmp(b.data(), kMagic, 6) != 0)
    fail("'" + path + "' is not an npy file " + at_byte(0, gz) +
         ": it does not start with \\x93NUMPY");
  if (b.size() < 10)
    fail("'" + path + "' is truncated " + at_byte(b.size(), gz) +
         ": an npy header has at least 10 bytes");
  const int major = b[6];
  size_t len, start;
  if (major == 1) {
    len = b[8] | (size_t{b[9]} << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12)
      fail("'" + path + "' is truncated " + at_byte(b.size(), gz) + ": an npy " +
           std::to_string(major) + ".0 header has at least 12 bytes");
    len = load_le32(b.data() + 8);
    start = 12;
  } else {
    fail("'" + path + "' is npy version " + std::to_string(major) + "." + std::to_string(b[7]) +
         " " + at_byte(6, gz) + ", which Spora cannot read (it reads 1.0 to 3.0)");
  }
  if (b.size() < start + len)
    fail("'" + path + "' is truncated " + at_byte(b.size(), gz) + ": its npy header has " +
         std::to_string(start + len) + " bytes");
  const std::string dict(reinterpret_cast<const char*>(b.data() + start), len);
  const Where w{path, gz, start};
  NpyHeader h;
  h.data_offset = start + len;
  size_t at = 0;
  h.descr = dict_value(dict, "descr", w, &at);
  const DescrInfo info = descr_info(h.descr, path, w.at(at));
  h.dtype = info.dtype;
  h.elem_size = info.size;
  const std::string fo = dict_value(dict, "fortran_order", w, &at);
  if (fo != "True" && fo != "False") w.invalid(at, "fortran_order is '" + printable(fo) + "'");
  h.fortran_order = fo == "True";
  const std::string shape = dict_value(dict, "shape", w, &at);
  if (shape.empty() || shape[0] != '(')
    w.invalid(at, "the shape is '" + printable(shape) + "', not a tuple");
  for (size_t i = 1; i < shape.size();) {
    while (i < shape.size() && !std::isdigit(static_cast<unsigned char>(shape[i]))) {
      if (shape[i] == '-')
        w.invalid(at + i, "a negative dimension in its shape " + printable(shape));
      ++i;
    }
    if (i >= shape.size()) break;
    int64_t d = 0;
    const size_t digits_at = i;
    while (i < shape.size() && std::isdigit(static_cast<unsigned char>(shape[i]))) {
      d = d * 10 + (shape[i] - '0');
      if (d > (int64_t{1} << 40))
        w.invalid(at + digits_at, "an implausible shape " + printable(shape));
      ++i;
    }
    h.shape.push_back(d);
  }
  return h;
}

NpyHeader read_npy_header(const std::string& path) {
  bool gz = false;
  Bytes head = read_prefix(path, 12, &gz);
  if (head.size() >= 10 && std::memcmp(head.data(), kMagic, 6) == 0) {
    const size_t len = head[6] == 1 ? (head[8] | (size_t{head[9]} << 8)) + 10
                                    : (head.size() >= 12 ? load_le32(head.data() + 8) + 12 : 12);
    head = read_prefix(path, std::min<size_t>(len, size_t{1} << 24), &gz);
  }
  return parse_npy_header(head, path, gz);
}

sem::Tensor read_npy(const std::string& path) {
  bool gz = false;
  Bytes b = read_file(path, true, &gz);
  NpyHeader h = parse_npy_header(b, path, gz);
  // Checked before anything is allocated: a header may announce any size.
  announced_bytes(b.size(), h.data_offset, h.shape, h.elem_size, path, h.str(), gz);
  sem::Tensor t = sem::Tensor::empty(h.dtype, h.shape);
  const uint8_t* src = b.data() + h.data_offset;
  const int64_t n = t.numel();
  if (n == 0) return t;  // (the strides below may overflow when a dimension is 0)
  if (!h.fortran_order) {
    for (int64_t i = 0; i < n; ++i) convert(src, h, t, i, i);
    return t;
  }
  // Column-major: file element i has multi-index (i0, i1, ...) with i0 varying fastest.
  const int64_t r = t.rank();
  std::vector<int64_t> idx(static_cast<size_t>(r), 0), stride(static_cast<size_t>(r), 1);
  for (int64_t d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * h.shape[d + 1];
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = 0;
    for (int64_t d = 0; d < r; ++d) j += idx[d] * stride[d];
    convert(src, h, t, i, j);
    for (int64_t d = 0; d < r; ++d) {
      if (++idx[d] < h.shape[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}

std::string npy_bytes(const sem::Tensor& t, const std::string& path) {
  std::string descr;
  switch (t.dtype()) {
    case DType::f16: descr = "<f2"; break;
    case DType::f32: descr = "<f4"; break;
    case DType::f64: descr = "<f8"; break;
    case DType::i32: descr = "<i4"; break;
    case DType::i64: descr = "<i8"; break;
    case DType::boolean: descr = "|b1"; break;
    case DType::bf16:
      fail("cannot write '" + path + "': npy has no bf16 type (cast to f32 first)");
  }
  std::string shape = "(";
  for (int64_t d = 0; d < t.rank(); ++d) shape += std::to_string(t.shape()[d]) + (t.rank() == 1 ? ",)" : d + 1 < t.rank() ? ", " : ")");
  if (t.rank() == 0) shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + version + length + dict + '\n' is a multiple of 64.
  const size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 65535) fail("cannot write '" + path + "': the npy header of " + t.type()->str() + " is too long");
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy(const sem::Tensor& t, const std::string& path) { write_file_atomic(path, npy_bytes(t, path)); }

}  // namespace spora::runtime::data
