// Damaged dataset files (.npy, idx, gzip idx, a Fashion-MNIST directory): cut at every byte and
// with header bytes overwritten, every read either returns a tensor or fails with a UserError
// naming the file and the byte ("'x.npy' is truncated at byte 136: ..."); nothing else escapes.
// The command-line side (spora run on such files) is tests/faults/dataset_test.sh.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "backends/runtime/data/dataset.h"
#include "backends/runtime/data/idx.h"
#include "backends/runtime/data/npy.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("spora_faults_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string gzip(const std::string& raw, const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
  return slurp(path);
}

// What one read did: "" when it returned, else the UserError's message. Any other exception
// fails the test (a crash ends it).
std::string outcome(const std::function<void()>& read, const std::string& what) {
  try {
    read();
  } catch (const lang::UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": escaped " << typeid(e).name() << ": " << e.what();
    return e.what();
  }
  return "";
}

// A located error: the file's name in quotes and "at byte N".
void expect_located(const std::string& message, const std::string& path, const std::string& what) {
  EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << what << ": " << message;
  EXPECT_TRUE(std::regex_search(message, std::regex("at byte [0-9]+"))) << what << ": " << message;
}

// The byte an error names.
long byte_of(const std::string& message) {
  std::smatch m;
  return std::regex_search(message, m, std::regex("at byte ([0-9]+)")) ? std::stol(m[1]) : -1;
}

sem::Tensor iota(DType d, sem::Shape s) {
  sem::Tensor t = sem::Tensor::empty(d, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i % 7));
  return t;
}

// Every cut of `good` (0 .. size-1 bytes) fails, naming the file and the byte where it ends
// (`cut_at_end`), or the start when too little is left to recognise the format.
void every_cut_fails(const std::string& good, const std::string& path,
                     const std::function<void()>& read, size_t recognisable) {
  for (size_t cut = 0; cut < good.size(); ++cut) {
    write_bytes(path, good.substr(0, cut));
    const std::string what = "cut at " + std::to_string(cut);
    const std::string e = outcome(read, what);
    ASSERT_FALSE(e.empty()) << what << ": a truncated file was read";
    expect_located(e, path, what);
    if (cut >= recognisable) {
      EXPECT_NE(e.find("is truncated at byte " + std::to_string(cut)), std::string::npos)
          << what << ": " << e;
    }
  }
}

// Every header byte overwritten with each of a few values: a tensor or a located error.
void every_header_byte_overwritten(const std::string& good, size_t header, const std::string& path,
                                   const std::function<void()>& read, int* errors) {
  for (size_t i = 0; i < header; ++i)
    for (int v : {0x00, 0xff, 0x20, int{'9'}, int{'-'}, int{'('}, int{'\''}, good[i] ^ 0x01}) {
      std::string bad = good;
      if (bad[i] == static_cast<char>(v)) continue;
      bad[i] = static_cast<char>(v);
      write_bytes(path, bad);
      const std::string what = "byte " + std::to_string(i) + " = " + std::to_string(v & 0xff);
      const std::string e = outcome(read, what);
      if (e.empty()) continue;
      ++*errors;
      expect_located(e, path, what);
    }
}

TEST(DataFaults, NpyCutAtEveryByte) {
  TempDir dir;
  const std::string path = dir / "x.npy";
  write_npy(iota(DType::f32, {3, 4}), path);
  const std::string good = slurp(path);
  ASSERT_EQ(good.size(), 128u + 48u);
  every_cut_fails(
      good, path, [&] { read_npy(path); }, 6);
  // The header alone (what compilation reads) fails the same way when it is cut.
  for (size_t cut = 6; cut < 128; ++cut) {
    write_bytes(path, good.substr(0, cut));
    const std::string e =
        outcome([&] { read_npy_header(path); }, "header cut at " + std::to_string(cut));
    EXPECT_EQ(byte_of(e), static_cast<long>(cut)) << e;
  }
  // A byte too many is corruption too.
  write_bytes(path, good + "x");
  EXPECT_EQ(outcome([&] { read_npy(path); }, "one byte more"),
            "'" + path +
                "' is corrupt at byte 176: 1 bytes follow the f32[3,4] data its header announces");
}

TEST(DataFaults, NpyHeaderBytesOverwritten) {
  TempDir dir;
  const std::string path = dir / "x.npy";
  write_npy(iota(DType::f32, {3, 4}), path);
  const std::string good = slurp(path);
  int errors = 0;
  every_header_byte_overwritten(
      good, 128, path, [&] { read_npy(path); }, &errors);
  EXPECT_GT(errors, 200);
  // Named places: the magic, the version, the dtype, fortran_order, the shape.
  const auto with = [&](size_t at, char v) {
    std::string bad = good;
    bad[at] = v;
    write_bytes(path, bad);
    return outcome([&] { read_npy(path); }, "byte " + std::to_string(at));
  };
  EXPECT_EQ(with(1, 'X'),
            "'" + path + "' is not an npy file at byte 0: it does not start with \\x93NUMPY");
  EXPECT_EQ(
      with(6, 9),
      "'" + path + "' is npy version 9.0 at byte 6, which Spora cannot read (it reads 1.0 to 3.0)");
  const size_t descr = good.find("<f4");
  EXPECT_EQ(with(descr + 1, 'c'),
            "'" + path + "' holds npy dtype '<c4' at byte " + std::to_string(descr) +
                ", which Spora cannot load (it loads f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 b1)");
  const size_t fo = good.find("False");
  EXPECT_EQ(with(fo, 'X'), "'" + path + "' is not a valid npy file at byte " + std::to_string(fo) +
                               ": fortran_order is 'Xalse'");
  const size_t shape = good.find("(3, 4)");
  EXPECT_EQ(with(shape + 3, '-'), "'" + path + "' is not a valid npy file at byte " +
                                      std::to_string(shape + 3) +
                                      ": a negative dimension in its shape (3,-4)");
  EXPECT_EQ(with(shape + 1, '5'),
            "'" + path + "' is truncated at byte 176: its header announces f32[5,4] (208 bytes)");
}

TEST(DataFaults, IdxCutAtEveryByte) {
  TempDir dir;
  const std::string path = dir / "x.idx";
  write_idx(iota(DType::i32, {3, 5}), path);
  const std::string good = slurp(path);
  ASSERT_EQ(good.size(), 12u + 60u);
  every_cut_fails(
      good, path, [&] { read_idx(path); }, 2);
  write_bytes(path, good + "xy");
  EXPECT_EQ(outcome([&] { read_idx(path); }, "two bytes more"),
            "'" + path +
                "' is corrupt at byte 72: 2 bytes follow the i32[3,5] data its header announces");
}

TEST(DataFaults, IdxHeaderBytesOverwritten) {
  TempDir dir;
  const std::string path = dir / "x.idx";
  write_idx(iota(DType::i32, {3, 5}), path);
  const std::string good = slurp(path);
  int errors = 0;
  every_header_byte_overwritten(
      good, 12, path, [&] { read_idx(path); }, &errors);
  EXPECT_GT(errors, 40);
  std::string bad = good;
  bad[2] = 0x07;
  write_bytes(path, bad);
  EXPECT_EQ(outcome([&] { read_idx(path); }, "type"),
            "'" + path + "' is not an idx file at byte 2: unknown element type 0x07");
  bad = good;
  bad[8] = '\xff';
  write_bytes(path, bad);
  EXPECT_EQ(outcome([&] { read_idx(path); }, "dimension"),
            "'" + path + "' is not an idx file at byte 8: dimension 1 is 4278190085");
}

TEST(DataFaults, GzipIdxCutAtEveryByte) {
  TempDir dir;
  const std::string plain = dir / "x.idx";
  write_idx(iota(DType::f32, {40, 6}), plain);
  const std::string path = dir / "x.idx.gz";
  const std::string good = gzip(slurp(plain), path);
  ASSERT_GT(good.size(), 30u);
  // Past the two magic bytes the file is gzip: the error is the end of the stream.
  every_cut_fails(
      good, path, [&] { read_idx(path); }, 2);
  write_bytes(path, good + "garbage");
  EXPECT_EQ(outcome([&] { read_idx(path); }, "bytes after the stream"),
            "'" + path + "' is corrupt at byte " + std::to_string(good.size()) +
                ": bytes follow the end of its gzip stream");
  // Two members are one stream of their bytes (as gzip -c a b > ab.gz).
  const std::string raw = slurp(plain);
  write_bytes(dir / "a", raw.substr(0, 50));
  write_bytes(dir / "b", raw.substr(50));
  write_bytes(path, gzip(raw.substr(0, 50), dir / "a.gz") + gzip(raw.substr(50), dir / "b.gz"));
  EXPECT_EQ(read_idx(path).numel(), 240);
}

TEST(DataFaults, GzipIdxEveryByteFlipped) {
  TempDir dir;
  const std::string plain = dir / "x.idx";
  write_idx(iota(DType::f32, {40, 6}), plain);
  const sem::Tensor want = read_idx(plain);
  const std::string path = dir / "x.idx.gz";
  const std::string good = gzip(slurp(plain), path);
  int read_back = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0xff);
    write_bytes(path, bad);
    const std::string what = "byte " + std::to_string(i) + " flipped";
    sem::Tensor got;
    const std::string e = outcome([&] { got = read_idx(path); }, what);
    if (e.empty()) {
      // Only the header's time stamp, extra flags and OS byte carry no check (RFC 1952).
      EXPECT_TRUE(i >= 4 && i <= 9) << what << " was read";
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
      ++read_back;
      continue;
    }
    expect_located(e, path, what);
  }
  EXPECT_EQ(read_back, 6);
  // Garbage in the middle of the deflate data: the byte is near the damage.
  std::string bad = good;
  const size_t mid = good.size() / 2;
  for (size_t i = mid; i < mid + 8; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  write_bytes(path, bad);
  const std::string e = outcome([&] { read_idx(path); }, "middle");
  EXPECT_EQ(e.rfind("'" + path + "' is corrupt at byte ", 0), 0u) << e;
  EXPECT_GE(byte_of(e), static_cast<long>(mid)) << e;
}

// A Fashion-MNIST directory (fashion_mnist(root=...)) with gzip idx files: cut, and a label out
// of range. (Each case has its own directory: decoded files are cached by name.)
TEST(DataFaults, FashionMnistDirectory) {
  TempDir scratch;
  const int n = 6;
  sem::Tensor images = sem::Tensor::empty(DType::boolean, {n, 28, 28});  // bool: written as u8
  for (int64_t i = 0; i < images.numel(); ++i) images.set(i, static_cast<double>(i % 3 == 0));
  write_idx(images, scratch / "img");
  sem::Tensor labels = sem::Tensor::empty(DType::boolean, {n});
  for (int i = 0; i < n; ++i) labels.set(i, i % 2);
  write_idx(labels, scratch / "lab");
  const std::string img = gzip(slurp(scratch / "img"), scratch / "img.gz");
  const std::string lab = slurp(scratch / "lab");
  // Walks the test split of a directory holding these gzip bytes and raw labels.
  const auto walk = [&](const TempDir& dir, const std::string& image_gz,
                        const std::string& label_raw) {
    write_bytes(dir / "t10k-images-idx3-ubyte.gz", image_gz);
    gzip(label_raw, dir / "t10k-labels-idx1-ubyte.gz");
    FashionOptions fo;
    fo.root = dir.path.string();
    fo.split = "test";
    BatchOptions bo;
    bo.batch = 2;
    return outcome(
        [&] {
          const FashionFiles files = fashion_files(fo);
          FashionMnist it(fo, bo, files);
          it.reset();
          sem::Value v;
          while (it.next_in(0, v)) {
          }
        },
        dir.path.string());
  };
  {
    TempDir dir;
    EXPECT_EQ(walk(dir, img, lab), "");
  }
  // The data cut: the header still reads at compile time; the walk fails.
  for (size_t cut : {img.size() - 1, img.size() - 9, img.size() / 2}) {
    TempDir dir;
    const std::string e = walk(dir, img.substr(0, cut), lab);
    const std::string images_path = dir / "t10k-images-idx3-ubyte.gz";
    expect_located(e, images_path, "images cut at " + std::to_string(cut));
    EXPECT_EQ(e.rfind("'" + images_path + "' is truncated at byte " + std::to_string(cut), 0), 0u)
        << e;
  }
  // A label byte past the classes (a valid gzip stream of a damaged file).
  std::string bad = lab;
  bad[8 + 3] = static_cast<char>(200);
  TempDir dir;
  EXPECT_EQ(walk(dir, img, bad),
            "'" + (dir / "t10k-labels-idx1-ubyte.gz") +
                "' is corrupt at byte 11 of its decompressed data: label 200, where "
                "Fashion-MNIST's classes are 0 to 9");
}

// save_curves writes two files: a failure on the second leaves both as they were.
TEST(DataFaults, SeveralFilesFailTogether) {
  TempDir dir;
  write_files_atomic({{dir / "a.csv", "old a"}, {dir / "a.svg", "old b"}});
  set_atomic_write_failure_for_testing(10);
  const std::string e = outcome(
      [&] {
        write_files_atomic({{dir / "a.csv", "new a"}, {dir / "a.svg", std::string(100, 'b')}});
      },
      "second file");
  set_atomic_write_failure_for_testing(-1);
  EXPECT_EQ(e, "cannot write '" + (dir / "a.svg") +
                   "': No space left on device (10 of 100 bytes written; '" + (dir / "a.csv") +
                   "' and '" + (dir / "a.svg") + "' are unchanged)");
  EXPECT_EQ(slurp(dir / "a.csv"), "old a");
  EXPECT_EQ(slurp(dir / "a.svg"), "old b");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path)) ++files;
  EXPECT_EQ(files, 2);
}

}  // namespace
}  // namespace spora::runtime::data
