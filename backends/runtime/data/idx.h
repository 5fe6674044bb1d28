// The idx format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), read plain or
// gzip-compressed, and written plain.
//
// Layout: two zero bytes, a type byte, the number of dims n, then n big-endian u32 sizes, then
// the elements row-major, big-endian. Types and the Spora dtype they load as:
//   0x08 u8 -> i32 (or what `dtype` asks)   0x09 i8 -> i32   0x0B i16 -> i32
//   0x0C i32 -> i32   0x0D f32 -> f32   0x0E f64 -> f64
// Writing: f32 -> 0x0D, f64 -> 0x0E, i32 -> 0x0C, bool -> 0x08 (reads back as i32 0/1); i64,
// f16 and bf16 have no idx type (a clear error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backends/runtime/data/files.h"
#include "semantics/value.h"

namespace spora::runtime::data {

struct IdxHeader {
  uint8_t type = 0;          // the idx type byte
  sem::Shape shape;
  size_t data_offset = 0;    // bytes before the elements
  bool gz = false;           // read from a gzip file (offsets are in its decompressed data)
  size_t elem_size() const;  // bytes of one element
  DType dtype() const;       // the dtype it loads as by default
  std::string str() const;   // "u8[60000,28,28]"
};

// Parses the header from the first bytes of a file: a UserError naming `path` and the byte when
// malformed ("'x.idx' is not an idx file at byte 2: unknown element type 0x07"; `gz`: the bytes
// were decompressed, files.h at_byte).
IdxHeader parse_idx_header(const Bytes& bytes, const std::string& path, bool gz = false);
// The header of a file (reads only its first bytes).
IdxHeader read_idx_header(const std::string& path);

// The whole file as a tensor of its default dtype, or converted to `dtype`.
sem::Tensor read_idx(const std::string& path, std::optional<DType> dtype = std::nullopt);
// The elements of a u8 file (images, labels) as raw bytes; `header` receives the header.
Bytes read_idx_u8(const std::string& path, IdxHeader& header);

// The idx bytes of a tensor (see above for the dtypes).
std::string idx_bytes(const sem::Tensor& t, const std::string& path);
void write_idx(const sem::Tensor& t, const std::string& path);

}  // namespace spora::runtime::data
