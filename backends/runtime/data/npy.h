// NumPy's .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html),
// versions 1.0 to 3.0, read (plain or gzip-compressed) and written (version 1.0).
//
// dtypes: <f2 f16, <f4 f32, <f8 f64, <i4 i32, <i8 i64, |b1 bool round-trip exactly; |u1 |i1
// <i2 <u2 load as i32 and <u4 as i64 (widened: Spora has no narrow integers); big-endian
// ('>') data is swapped; Fortran-order arrays are transposed into row-major. bf16 has no npy
// type: writing it is an error that says so. Object, string, complex and structured dtypes are
// errors naming the dtype.
#pragma once

#include <string>

#include "backends/runtime/data/files.h"
#include "semantics/value.h"

namespace spora::runtime::data {

struct NpyHeader {
  std::string descr;       // as in the file: "<f4"
  bool fortran_order = false;
  sem::Shape shape;
  size_t data_offset = 0;
  DType dtype = DType::f32;  // what it loads as
  size_t elem_size = 4;      // bytes per element in the file
  std::string str() const;   // "f32[100,784]" (the type it loads as)
};

// Errors name the file and the byte: "'x.npy' is not a valid npy file at byte 24: fortran_order
// is 'Maybe'" (`gz`: the bytes were decompressed, files.h at_byte).
NpyHeader parse_npy_header(const Bytes& bytes, const std::string& path, bool gz = false);
NpyHeader read_npy_header(const std::string& path);  // reads only the header
sem::Tensor read_npy(const std::string& path);
std::string npy_bytes(const sem::Tensor& t, const std::string& path);
void write_npy(const sem::Tensor& t, const std::string& path);

}  // namespace spora::runtime::data
