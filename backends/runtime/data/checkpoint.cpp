// Checkpoint writing and checked loading (see checkpoint.h).
#include "backends/runtime/data/checkpoint.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "backends/runtime/data/files.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'O', 'R', 'A', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kPrefix = 28;
constexpr size_t kAlign = 64;

struct Leaf {
  std::string path;
  const sem::Tensor* tensor = nullptr;  // saving
  DType dtype = DType::f32;
  sem::Shape shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The tensor leaves of v, depth first.
void leaves_of(const sem::Value& v, const std::string& path, std::vector<Leaf>& out, const std::string& file) {
  switch (v.kind) {
    case sem::Value::Kind::Tensor:
      out.push_back(Leaf{path.empty() ? "value" : path, &v.tensor, v.tensor.dtype(), v.tensor.shape(), 0,
                         v.tensor.nbytes()});
      return;
    case sem::Value::Kind::Tuple:
      for (size_t i = 0; i < v.items().size(); ++i) leaves_of(v.items()[i], join_path(path, std::to_string(i)), out, file);
      return;
    case sem::Value::Kind::Record:
      for (size_t i = 0; i < v.items().size(); ++i)
        leaves_of(v.items()[i], join_path(path, v.record_type->names.at(i)), out, file);
      return;
    default:
      throw lang::UserError("checkpoint '" + file + "': cannot save " + (path.empty() ? "the value" : "field " + path) +
                            ": it is " + (v.kind == sem::Value::Kind::String ? "a string" : "not data") +
                            ", not a tensor");
  }
}

std::string type_of(DType d, const sem::Shape& s) { return std::string(dtype_name(d)) + sem::shape_str(s); }

}  // namespace

std::string checkpoint_bytes(const sem::Value& v, const std::string& path) {
  std::vector<Leaf> leaves;
  leaves_of(v, "", leaves, path);
  uint64_t data_len = 0;
  std::string header;
  for (Leaf& l : leaves) {
    data_len = (data_len + kAlign - 1) / kAlign * kAlign;
    l.offset = data_len;
    data_len += l.bytes;
    std::string dims;
    for (size_t d = 0; d < l.shape.size(); ++d) dims += (d ? "," : "") + std::to_string(l.shape[d]);
    header += l.path + " " + std::string(dtype_name(l.dtype)) + " " + (dims.empty() ? "-" : dims) + " " +
              std::to_string(l.offset) + " " + std::to_string(l.bytes) + "\n";
  }
  std::string out(kPrefix + header.size() + data_len + 4, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kMagic, 8);
  store_le32(p + 8, kVersion);
  store_le32(p + 12, static_cast<uint32_t>(header.size()));
  store_le64(p + 16, data_len);
  store_le32(p + 24, crc32_of(p, 24));
  std::memcpy(p + kPrefix, header.data(), header.size());
  uint8_t* data = p + kPrefix + header.size();
  for (const Leaf& l : leaves)
    if (l.bytes) std::memcpy(data + l.offset, l.tensor->raw(), l.bytes);
  store_le32(p + out.size() - 4, crc32_of(p, out.size() - 4));
  return out;
}

void save_checkpoint(const sem::Value& v, const std::string& path) {
  write_file_atomic(path, checkpoint_bytes(v, path));
}

sem::Value parse_checkpoint(const std::string& bytes, const std::string& path, const sem::Value& like) {
  const std::string what = "checkpoint '" + path + "'";
  auto fail = [&](const std::string& m) -> void { throw lang::UserError(what + m); };
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  if (size >= 8 && std::memcmp(p, kMagic, 8) != 0)
    fail(" is not a Spora checkpoint (it does not start with SPORACKP)");
  if (size < kPrefix + 4)
    fail(" is truncated: " + std::to_string(size) + " bytes, less than the " + std::to_string(kPrefix + 4) +
         " of an empty checkpoint");
  const uint32_t version = load_le32(p + 8);
  if (crc32_of(p, 24) != load_le32(p + 24)) fail(" is corrupt: its header checksum does not match");
  if (version != kVersion)
    fail(" has format version " + std::to_string(version) + "; this Spora reads version " + std::to_string(kVersion));
  const uint64_t header_len = load_le32(p + 12);
  const uint64_t data_len = load_le64(p + 16);
  // A length field near 2^64 must not wrap the sum below.
  const uint64_t expected = data_len > (uint64_t{1} << 62) ? UINT64_MAX : kPrefix + header_len + data_len + 4;
  if (size < expected)
    fail(" is truncated: " + std::to_string(size) + " bytes, its header announces " + std::to_string(expected));
  if (size > expected)
    fail(" is corrupt: " + std::to_string(size) + " bytes, its header announces " + std::to_string(expected));
  const uint32_t stored = load_le32(p + size - 4);
  const uint32_t actual = crc32_of(p, size - 4);
  if (stored != actual) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " is corrupt: checksum mismatch (stored %08x, computed %08x)", stored, actual);
    fail(buf);
  }
  // The header lines.
  std::map<std::string, Leaf> in_file;
  std::vector<std::string> file_order;
  std::istringstream lines(bytes.substr(kPrefix, header_len));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    Leaf l;
    std::string dt, dims;
    if (!(f >> l.path >> dt >> dims >> l.offset >> l.bytes)) fail(" is corrupt: bad header line '" + line + "'");
    auto d = parse_dtype(dt);
    if (!d) fail(" is corrupt: unknown dtype '" + dt + "' of field " + l.path);
    l.dtype = *d;
    if (dims != "-") {
      std::istringstream ds(dims);
      std::string one;
      while (std::getline(ds, one, ',')) {
        char* end = nullptr;
        const long long d = std::strtoll(one.c_str(), &end, 10);
        if (one.empty() || *end != '\0' || d < 0) fail(" is corrupt: bad shape '" + dims + "' of field " + l.path);
        l.shape.push_back(d);
      }
    }
    const std::optional<uint64_t> bytes = array_bytes(l.shape, dtype_size(l.dtype));
    if (!bytes || l.bytes != *bytes || l.bytes > data_len || l.offset > data_len - l.bytes)
      fail(" is corrupt: field " + l.path + " does not fit its data");
    file_order.push_back(l.path);
    in_file.emplace(l.path, std::move(l));
  }
  // The model's structure, leaf by leaf.
  std::vector<Leaf> want;
  leaves_of(like, "", want, path);
  for (const Leaf& w : want) {
    auto it = in_file.find(w.path);
    if (it == in_file.end())
      fail(": the model has field " + w.path + " (" + type_of(w.dtype, w.shape) + "), the checkpoint does not");
    const Leaf& got = it->second;
    if (got.dtype != w.dtype || got.shape != w.shape)
      fail(": field " + w.path + " has " + (got.dtype != w.dtype ? "type " : "shape ") + type_of(got.dtype, got.shape) +
           ", the model expects " + type_of(w.dtype, w.shape));
  }
  if (in_file.size() > want.size()) {
    for (const std::string& f : file_order) {
      bool known = false;
      for (const Leaf& w : want) known = known || w.path == f;
      if (!known) fail(": field " + f + " is not in the model");
    }
  }
  const uint8_t* data = p + kPrefix + header_len;
  auto rebuild = [&](auto&& self, const sem::Value& v, const std::string& at) -> sem::Value {
    if (v.kind == sem::Value::Kind::Tensor) {
      const Leaf& l = in_file.at(at.empty() ? "value" : at);
      sem::Tensor t = sem::Tensor::empty(l.dtype, l.shape);
      if (l.bytes) std::memcpy(t.raw(), data + l.offset, l.bytes);
      return sem::Value(std::move(t));
    }
    std::vector<sem::Value> parts;
    for (size_t i = 0; i < v.items().size(); ++i) {
      const std::string name = v.kind == sem::Value::Kind::Record ? v.record_type->names.at(i) : std::to_string(i);
      parts.push_back(self(self, v.items()[i], join_path(at, name)));
    }
    if (v.kind == sem::Value::Kind::Record) return sem::Value::record(v.record_type, std::move(parts));
    return sem::Value::tuple(std::move(parts));
  };
  return rebuild(rebuild, like, "");
}

sem::Value load_checkpoint(const std::string& path, const sem::Value& like) {
  if (!file_exists(path)) throw lang::UserError("checkpoint '" + path + "' does not exist");
  Bytes b = read_file(path, false);
  return parse_checkpoint(std::string(b.begin(), b.end()), path, like);
}

}  // namespace spora::runtime::data
