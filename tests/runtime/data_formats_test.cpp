// idx and npy readers/writers (backends/runtime/data/idx.h, npy.h): round trips of every dtype,
// files written by hand byte by byte (as NumPy and LeCun's tools write them), the real
// Fashion-MNIST files decoded independently with zlib, and the errors for bad files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends/runtime/data/idx.h"
#include "backends/runtime/data/npy.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {
namespace {

namespace fs = std::filesystem;

const std::string kFashion = "/usr/share/datasets/fashion-mnist";

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("spora_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The message of the UserError f throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

// A tensor of dtype d and shape s with element i = v(i).
sem::Tensor make(DType d, sem::Shape s, double (*v)(int64_t)) {
  sem::Tensor t = sem::Tensor::empty(d, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v(i));
  return t;
}

void expect_same(const sem::Tensor& a, const sem::Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

// Decompresses a whole gzip file with zlib's gz* API (independent of the loader's code path).
std::vector<uint8_t> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_TRUE(f) << path;
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

// ---- npy ------------------------------------------------------------------------------------------

TEST(Npy, RoundTripEveryDtype) {
  TempDir dir;
  const std::vector<std::pair<DType, sem::Shape>> cases = {
      {DType::f32, {3, 4}}, {DType::f64, {2, 3, 2}}, {DType::i32, {5}}, {DType::i64, {2, 2}},
      {DType::boolean, {7}}, {DType::f16, {2, 3}}, {DType::f32, {}}, {DType::i32, {0, 3}}};
  for (const auto& [d, s] : cases) {
    const sem::Tensor t = make(d, s, [](int64_t i) { return i % 3 == 0 ? -1.5 * static_cast<double>(i) : i % 2; });
    const std::string path = dir / ("x_" + std::string(dtype_name(d)) + std::to_string(s.size()) + ".npy");
    write_npy(t, path);
    const NpyHeader h = read_npy_header(path);
    EXPECT_EQ(h.dtype, d);
    EXPECT_EQ(h.shape, s);
    EXPECT_EQ(h.data_offset % 64, 0u) << "the data starts 64-byte aligned";
    expect_same(read_npy(path), t);
  }
  EXPECT_EQ(error_of([&] { write_npy(sem::Tensor::zeros(DType::bf16, {2}), dir / "b.npy"); }),
            "cannot write '" + (dir / "b.npy") + "': npy has no bf16 type (cast to f32 first)");
}

TEST(Npy, HeaderBytesAreNumpys) {
  // What numpy.save writes for np.arange(6, dtype='<i4').reshape(2, 3).
  const sem::Tensor t = make(DType::i32, {2, 3}, [](int64_t i) { return static_cast<double>(i); });
  const std::string b = npy_bytes(t, "x.npy");
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<uint8_t>(b[8]) | (static_cast<uint8_t>(b[9]) << 8), 118);
  EXPECT_EQ(b.substr(10, 59), "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(b[127], '\n');
  EXPECT_EQ(b.size(), 128u + 24u);
  const sem::Tensor v = make(DType::f32, {4}, [](int64_t i) { return static_cast<double>(i); });
  EXPECT_NE(npy_bytes(v, "v.npy").find("'shape': (4,), }"), std::string::npos);
}

// A hand-made npy file: header dict, then raw data bytes.
std::string npy_file(const std::string& dict, const std::string& data) {
  std::string d = dict;
  while ((10 + d.size() + 1) % 64) d += ' ';
  d += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(d.size() & 0xff);
  out += static_cast<char>(d.size() >> 8);
  return out + d + data;
}

TEST(Npy, BigEndianFortranAndNarrowIntegers) {
  TempDir dir;
  // >i2 [[1, 2, 3], [4, 5, 6]] in Fortran order: stored column by column 1 4 2 5 3 6.
  std::string data;
  for (int v : {1, 4, 2, 5, 3, -6}) {
    data += static_cast<char>((v >> 8) & 0xff);
    data += static_cast<char>(v & 0xff);
  }
  write_bytes(dir / "f.npy", npy_file("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }", data));
  const sem::Tensor t = read_npy(dir / "f.npy");
  EXPECT_EQ(t.dtype(), DType::i32);
  ASSERT_EQ(t.shape(), (sem::Shape{2, 3}));
  const int32_t want[] = {1, 2, 3, 4, 5, -6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<int32_t>()[i], want[i]) << i;
  // |u1 loads as i32, 255 stays 255.
  write_bytes(dir / "u.npy", npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "\xff\x07"));
  const sem::Tensor u = read_npy(dir / "u.npy");
  EXPECT_EQ(u.data<int32_t>()[0], 255);
  EXPECT_EQ(u.data<int32_t>()[1], 7);
}

TEST(Npy, BadFilesNameThePath) {
  TempDir dir;
  const std::string missing = dir / "missing.npy";
  EXPECT_EQ(error_of([&] { read_npy(missing); }), "cannot open '" + missing + "': No such file or directory");
  write_bytes(dir / "text.npy", "hello, world");
  EXPECT_EQ(error_of([&] { read_npy(dir / "text.npy"); }),
            "'" + (dir / "text.npy") +
                "' is not an npy file at byte 0: it does not start with \\x93NUMPY");
  write_bytes(dir / "c.npy", npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", std::string(16, 0)));
  EXPECT_NE(error_of([&] {
              read_npy(dir / "c.npy");
            }).find("holds npy dtype '<c8' at byte 21, which Spora cannot load"),
            std::string::npos);
  // Truncated data: the header announces 3 f4, the file has 2.
  write_bytes(dir / "t.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", std::string(8, 0)));
  EXPECT_EQ(error_of([&] { read_npy(dir / "t.npy"); }),
            "'" + (dir / "t.npy") +
                "' is truncated at byte 136: its header announces f32[3] (140 bytes)");
}

// A header may announce any size: the file's size is checked before anything is allocated, and
// a size past 2^64 is an error, not a wrapped product. (Found by tests/fuzz/fuzz_npy: the first
// file made the reader allocate 11 GB before it looked at the file's size.)
TEST(Npy, AnnouncedSizesAreCheckedBeforeAllocating) {
  TempDir dir;
  write_bytes(dir / "big.npy",
              npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (917195893, 3), }", std::string(8, 0)));
  const std::string big = error_of([&] { read_npy(dir / "big.npy"); });
  EXPECT_EQ(
      big.rfind("'" + (dir / "big.npy") +
                    "' is truncated at byte 136: its header announces f32[917195893,3] (11006350",
                0),
      0u)
      << big;
  // More bytes than any machine has, below 2^64: an allocation first would throw bad_alloc.
  write_bytes(dir / "huge.npy",
              npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1000000), }", ""));
  EXPECT_NE(error_of([&] { read_npy(dir / "huge.npy"); })
                .find("its header announces f32[1099511627776,1000000] (4398046511104000"),
            std::string::npos);
  write_bytes(dir / "wrap.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, "
                                         "1099511627776, 16), }",
                                         ""));
  EXPECT_NE(error_of([&] { read_npy(dir / "wrap.npy"); })
                .find("its header announces f32[1099511627776,1099511627776,16] (a size past 64 bits)"),
            std::string::npos);
  // Found by the fuzz smoke run: an empty Fortran-order array whose other dimensions' product
  // overflows (the strides of the transposition did).
  write_bytes(dir / "empty.npy", npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (0, "
                                          "100000000000, 100000000000), }",
                                          ""));
  const sem::Tensor empty = read_npy(dir / "empty.npy");
  EXPECT_EQ(empty.shape(), (sem::Shape{0, 100000000000, 100000000000}));
  EXPECT_EQ(empty.numel(), 0);
  // The same count with the zero last: the running count passes 2^63 first.
  write_bytes(dir / "late.npy", npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (1099511627776, "
                                         "8388608, 0), }",
                                         ""));
  EXPECT_NE(error_of([&] { read_npy(dir / "late.npy"); }).find("(a size past 64 bits)"), std::string::npos);
}

// ---- idx ------------------------------------------------------------------------------------------

TEST(Idx, RoundTripEveryIdxDtype) {
  TempDir dir;
  for (DType d : {DType::f32, DType::f64, DType::i32}) {
    const sem::Tensor t = make(d, {2, 3, 4}, [](int64_t i) { return i % 5 == 0 ? -1e6 + static_cast<double>(i) : 0.25 * static_cast<double>(i); });
    const std::string path = dir / ("x_" + std::string(dtype_name(d)) + ".idx");
    write_idx(t, path);
    EXPECT_EQ(read_idx_header(path).shape, (sem::Shape{2, 3, 4}));
    expect_same(read_idx(path), t);
  }
  // bool is written as u8 and reads back as i32 0/1.
  const sem::Tensor b = make(DType::boolean, {5}, [](int64_t i) { return static_cast<double>(i % 2); });
  write_idx(b, dir / "b.idx");
  const sem::Tensor bb = read_idx(dir / "b.idx");
  EXPECT_EQ(bb.dtype(), DType::i32);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bb.data<int32_t>()[i], i % 2);
  EXPECT_EQ(error_of([&] { write_idx(sem::Tensor::zeros(DType::i64, {2}), dir / "l.idx"); }),
            "cannot write '" + (dir / "l.idx") +
                "': the idx format has no i64 type (it has u8, i8, i16, i32, f32, f64; save_npy keeps every dtype)");
}

// Dimensions whose product passes 2^64 are an error (found by tests/fuzz/fuzz_idx: the product
// overflowed, and u8[2^31, 2^31, 4] wrapped to 0 bytes, which an empty file "held").
TEST(Idx, SizesPast64BitsAreAnError) {
  TempDir dir;
  write_bytes(dir / "wrap.idx", std::string("\0\0\x08\x03\x80\0\0\0\x80\0\0\0\0\0\0\x04", 16));
  EXPECT_EQ(error_of([&] { read_idx(dir / "wrap.idx"); }),
            "'" + (dir / "wrap.idx") +
                "' is truncated at byte 16: its header announces u8[2147483648,2147483648,4] (a "
                "size past 64 bits)");
  // The input the fuzzer found: ten f32 dimensions.
  const std::string found("\0\0\x0d\x0a\0\0\0\x63\x02\0\0\x07\0\x03\0\0\x63\x02\0\0\x07\x63\0\0\0\0\0\0\0"
                          "\xff\xc0\x7f\0\x8e\x01\0\x02\0\0\0\x04\0\x01\x01",
                          44);
  write_bytes(dir / "found.idx", found);
  EXPECT_NE(error_of([&] {
              read_idx(dir / "found.idx");
            }).find("is truncated at byte 44: its header announces f32["),
            std::string::npos);
}

TEST(Idx, BigEndianBytesAndGzip) {
  TempDir dir;
  // i16 [2] = {-2, 300}: 00 00 0B 01 | 00 00 00 02 | FF FE 01 2C
  const std::string raw("\x00\x00\x0b\x01\x00\x00\x00\x02\xff\xfe\x01\x2c", 12);
  write_bytes(dir / "s.idx", raw);
  sem::Tensor t = read_idx(dir / "s.idx");
  EXPECT_EQ(t.dtype(), DType::i32);
  EXPECT_EQ(t.data<int32_t>()[0], -2);
  EXPECT_EQ(t.data<int32_t>()[1], 300);
  // The same bytes gzip-compressed (written with zlib) read the same; dtype converts.
  gzFile gz = gzopen((dir / "s.idx.gz").c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
  sem::Tensor g = read_idx(dir / "s.idx.gz", DType::f32);
  EXPECT_EQ(g.dtype(), DType::f32);
  EXPECT_EQ(g.data<float>()[0], -2.0f);
  EXPECT_EQ(g.data<float>()[1], 300.0f);
  // A truncated gzip stream is an error naming the file, never a short tensor.
  const std::string whole = [&] {
    std::ifstream f(dir / "s.idx.gz", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  write_bytes(dir / "cut.idx.gz", whole.substr(0, whole.size() - 10));
  const std::string e = error_of([&] { read_idx(dir / "cut.idx.gz"); });
  EXPECT_NE(e.find("'" + (dir / "cut.idx.gz") + "'"), std::string::npos) << e;
  // Header errors.
  write_bytes(dir / "bad.idx", std::string("\x01\x00\x08\x01", 4));
  EXPECT_EQ(
      error_of([&] { read_idx(dir / "bad.idx"); }),
      "'" + (dir / "bad.idx") +
          "' is not an idx file at byte 0: it does not start with two zero bytes (0x01 0x00)");
  write_bytes(dir / "short.idx", std::string("\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02", 10));
  EXPECT_EQ(error_of([&] { read_idx(dir / "short.idx"); }),
            "'" + (dir / "short.idx") +
                "' is truncated at byte 10: its header announces u8[5] (13 bytes)");
}

TEST(Idx, RealFashionMnistHeadersAndFirstExamples) {
  if (!fs::exists(kFashion + "/t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const IdxHeader train = read_idx_header(kFashion + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(train.str(), "u8[60000,28,28]");
  EXPECT_EQ(read_idx_header(kFashion + "/train-labels-idx1-ubyte.gz").str(), "u8[60000]");
  EXPECT_EQ(read_idx_header(kFashion + "/t10k-images-idx3-ubyte.gz").str(), "u8[10000,28,28]");
  // Decoded independently: magic 0x801, count, then labels; the first label of both splits is
  // 9 (ankle boot).
  for (const char* split : {"train", "t10k"}) {
    const std::vector<uint8_t> raw = gunzip(kFashion + "/" + split + "-labels-idx1-ubyte.gz");
    ASSERT_GT(raw.size(), 8u);
    EXPECT_EQ((raw[2] << 8) | raw[3], 0x0801);
    EXPECT_EQ(raw[8], 9) << split;
    const sem::Tensor labels = read_idx(kFashion + "/" + split + "-labels-idx1-ubyte.gz");
    EXPECT_EQ(labels.data<int32_t>()[0], 9) << split;
    for (int i = 0; i < 100; ++i) EXPECT_EQ(labels.data<int32_t>()[i], raw[8 + i]);
  }
  // The first test image, pixel by pixel, against the raw bytes after the 16-byte header.
  const std::vector<uint8_t> raw = gunzip(kFashion + "/t10k-images-idx3-ubyte.gz");
  const sem::Tensor images = read_idx(kFashion + "/t10k-images-idx3-ubyte.gz", DType::f32);
  ASSERT_EQ(images.shape(), (sem::Shape{10000, 28, 28}));
  int nonzero = 0;
  for (int k = 0; k < 784; ++k) {
    EXPECT_EQ(images.data<float>()[k], static_cast<float>(raw[16 + k]));
    nonzero += raw[16 + k] != 0;
  }
  EXPECT_GT(nonzero, 100);  // a real picture, not zeros
}

}  // namespace
}  // namespace spora::runtime::data
