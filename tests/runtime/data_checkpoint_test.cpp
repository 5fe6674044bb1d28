// Checkpoints (backends/runtime/data/checkpoint.h) and atomic writes (files.h): round trips,
// every corruption case (truncation at several offsets, each byte region flipped, wrong
// structure), and a failed write leaving the old file intact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backends/runtime/data/checkpoint.h"
#include "backends/runtime/data/files.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {
namespace {

namespace fs = std::filesystem;
using sem::Tensor;
using sem::Type;
using sem::Value;

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("spora_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void spill(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Tensor filled(DType d, sem::Shape s, double base) {
  Tensor t = Tensor::empty(d, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, base + static_cast<double>(i) * 0.5);
  return t;
}

// Dense{w, b} records inside MLP{l1, l2}, as the lowering packs a model.
Value dense(int64_t in, int64_t out, double base) {
  auto type = Type::record("Dense", {"w", "b"}, {Type::tensor(DType::f32, {in, out}), Type::tensor(DType::f32, {out})});
  return Value::record(type, {Value(filled(DType::f32, {in, out}, base)), Value(filled(DType::f32, {out}, -base))});
}
Value mlp(int64_t hidden, double base) {
  Value l1 = dense(4, hidden, base), l2 = dense(hidden, 3, base + 100);
  auto type = Type::record("MLP", {"l1", "l2"}, {l1.type(), l2.type()});
  return Value::record(type, {l1, l2});
}

void expect_equal_values(const Value& a, const Value& b) {
  ASSERT_EQ(a.kind, b.kind);
  if (a.is_tensor()) {
    ASSERT_EQ(a.tensor.type()->str(), b.tensor.type()->str());
    EXPECT_EQ(std::memcmp(a.tensor.raw(), b.tensor.raw(), a.tensor.nbytes()), 0);
    return;
  }
  ASSERT_EQ(a.items().size(), b.items().size());
  for (size_t i = 0; i < a.items().size(); ++i) expect_equal_values(a.items()[i], b.items()[i]);
}

TEST(Checkpoint, RoundTripModelTupleAndEveryDtype) {
  TempDir dir;
  const Value net = mlp(5, 1.0);
  save_checkpoint(net, dir / "mlp.ckpt");
  const Value back = load_checkpoint(dir / "mlp.ckpt", mlp(5, 0.0));
  EXPECT_EQ(back.type()->str(), net.type()->str());
  expect_equal_values(back, net);
  // A tuple (model, optimiser state) with scalars and every dtype.
  std::vector<Value> leaves;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean, DType::f16, DType::bf16})
    leaves.emplace_back(filled(d, {3}, 1.0));
  leaves.emplace_back(Tensor::scalar(DType::i64, 42));
  const Value state = Value::tuple({net, Value::tuple(leaves)});
  save_checkpoint(state, dir / "state.ckpt");
  expect_equal_values(load_checkpoint(dir / "state.ckpt", state), state);
  // The header lists the field paths.
  const std::string bytes = slurp(dir / "state.ckpt");
  EXPECT_NE(bytes.find("0.l1.w f32 4,5 "), std::string::npos);
  EXPECT_NE(bytes.find("1.7 i64 - "), std::string::npos);
}

TEST(Checkpoint, StructureMismatchNamesTheField) {
  TempDir dir;
  const std::string path = dir / "mlp.ckpt";
  save_checkpoint(mlp(256, 1.0), path);
  EXPECT_EQ(error_of([&] { load_checkpoint(path, mlp(512, 0.0)); }),
            "checkpoint '" + path + "': field l1.w has shape f32[4,256], the model expects f32[4,512]");
  // dtype
  auto t64 = Type::record("Dense", {"w", "b"}, {Type::tensor(DType::f64, {4, 256}), Type::tensor(DType::f32, {256})});
  Value d64 = Value::record(t64, {Value(Tensor::zeros(DType::f64, {4, 256})), Value(Tensor::zeros(DType::f32, {256}))});
  Value l2 = dense(256, 3, 0);
  Value other = Value::record(Type::record("MLP", {"l1", "l2"}, {d64.type(), l2.type()}), {d64, l2});
  EXPECT_EQ(error_of([&] { load_checkpoint(path, other); }),
            "checkpoint '" + path + "': field l1.w has type f32[4,256], the model expects f64[4,256]");
  // A field the model has and the file does not, and the other way round.
  Value l3 = dense(3, 2, 0);
  Value bigger = Value::record(Type::record("MLP", {"l1", "l2", "l3"}, {dense(4, 256, 0).type(), l2.type(), l3.type()}),
                               {dense(4, 256, 0), l2, l3});
  EXPECT_EQ(error_of([&] { load_checkpoint(path, bigger); }),
            "checkpoint '" + path + "': the model has field l3.w (f32[3,2]), the checkpoint does not");
  Value smaller = Value::record(Type::record("MLP", {"l1"}, {dense(4, 256, 0).type()}), {dense(4, 256, 0)});
  EXPECT_EQ(error_of([&] { load_checkpoint(path, smaller); }),
            "checkpoint '" + path + "': field l2.w is not in the model");
  EXPECT_EQ(error_of([&] { load_checkpoint(dir / "nope.ckpt", smaller); }),
            "checkpoint '" + (dir / "nope.ckpt") + "' does not exist");
}

TEST(Checkpoint, TruncatedAtEveryRegion) {
  TempDir dir;
  const std::string good = checkpoint_bytes(mlp(5, 1.0), "x");
  const Value like = mlp(5, 0.0);
  const std::string path = dir / "t.ckpt";
  // Inside the magic, the fixed prefix, the header text, the data, and the final CRC.
  for (size_t cut : {size_t{0}, size_t{5}, size_t{20}, size_t{40}, good.size() / 2, good.size() - 3, good.size() - 1}) {
    spill(path, good.substr(0, cut));
    const std::string e = error_of([&] { load_checkpoint(path, like); });
    EXPECT_EQ(e.rfind("checkpoint '" + path + "' is truncated", 0), 0u) << "cut at " << cut << ": " << e;
  }
  spill(path, good.substr(0, good.size() / 2));
  EXPECT_EQ(error_of([&] { load_checkpoint(path, like); }),
            "checkpoint '" + path + "' is truncated: " + std::to_string(good.size() / 2) +
                " bytes, its header announces " + std::to_string(good.size()));
}

TEST(Checkpoint, EveryFlippedByteIsCaught) {
  const std::string good = checkpoint_bytes(mlp(3, 1.0), "x");
  const Value like = mlp(3, 0.0);
  int magic = 0, header = 0, checksum = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    const std::string e = error_of([&] { parse_checkpoint(bad, "f.ckpt", like); });
    ASSERT_FALSE(e.empty()) << "byte " << i << " flipped was not noticed";
    EXPECT_EQ(e.rfind("checkpoint 'f.ckpt'", 0), 0u) << e;
    magic += e.find("not a Spora checkpoint") != std::string::npos;
    header += e.find("header checksum does not match") != std::string::npos;
    checksum += e.find("checksum mismatch") != std::string::npos;
  }
  EXPECT_EQ(magic, 8);
  EXPECT_EQ(header, 20);  // version, lengths, the prefix CRC itself
  EXPECT_EQ(checksum, static_cast<int>(good.size()) - 28);
  EXPECT_NE(error_of([&] { parse_checkpoint(good.substr(0, good.size() - 4) + "abcd", "f.ckpt", like); })
                .find("checksum mismatch (stored 64636261"),
            std::string::npos);
}

// A checkpoint with valid checksums around the given header text and data length (data: zeros).
std::string forged(const std::string& header, uint64_t data_len, size_t data_bytes) {
  std::string out(28, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, "SPORACKP", 8);
  store_le32(p + 8, 1);
  store_le32(p + 12, static_cast<uint32_t>(header.size()));
  store_le64(p + 16, data_len);
  store_le32(p + 24, crc32_of(p, 24));
  out += header + std::string(data_bytes, '\0') + "0000";
  p = reinterpret_cast<uint8_t*>(out.data());
  store_le32(p + out.size() - 4, crc32_of(p, out.size() - 4));
  return out;
}

// Lengths, offsets and shapes near 2^64 in a header with valid checksums: a located error, not
// a wrapped sum that lets a copy read outside the file.
TEST(Checkpoint, HeaderSizesNear64BitsAreCorruption) {
  const Value like = mlp(3, 0.0);
  const std::string rest = "l1.b f32 3 64 12\nl2.w f32 3,3 128 36\nl2.b f32 3 192 12\n";
  // l1.w at offset 2^64 - 16: offset + bytes wraps to 32.
  EXPECT_EQ(error_of([&] {
              parse_checkpoint(forged("l1.w f32 4,3 18446744073709551600 48\n" + rest, 256, 256), "f.ckpt", like);
            }),
            "checkpoint 'f.ckpt' is corrupt: field l1.w does not fit its data");
  // A shape whose element count passes 2^64.
  EXPECT_EQ(error_of([&] {
              parse_checkpoint(forged("l1.w f32 4294967296,4294967296,4 0 0\n" + rest, 256, 256), "f.ckpt", like);
            }),
            "checkpoint 'f.ckpt' is corrupt: field l1.w does not fit its data");
  // A data length that wraps the announced file size.
  const std::string wrap = forged("l1.w f32 4,3 0 48\n" + rest, ~uint64_t{0} - 40, 0);
  EXPECT_EQ(error_of([&] { parse_checkpoint(wrap, "f.ckpt", like); }),
            "checkpoint 'f.ckpt' is truncated: " + std::to_string(wrap.size()) +
                " bytes, its header announces 18446744073709551615");
}

TEST(Checkpoint, NonTensorLeavesAreRefused) {
  const Value v = Value::tuple({Value(Tensor::zeros(DType::f32, {2})), Value::string("hi")});
  EXPECT_EQ(error_of([&] { checkpoint_bytes(v, "s.ckpt"); }), "checkpoint 's.ckpt': cannot save field 1: it is a string, not a tensor");
}

TEST(AtomicWrite, FailureLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir / "model.ckpt";
  save_checkpoint(mlp(4, 1.0), path);
  const std::string before = slurp(path);
  for (int64_t fail_after : {0, 10, 100}) {
    set_atomic_write_failure_for_testing(fail_after);
    const std::string e = error_of([&] { save_checkpoint(mlp(4, 7.0), path); });
    set_atomic_write_failure_for_testing(-1);
    EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
    EXPECT_EQ(slurp(path), before);
    int files = 0;
    for (const auto& entry : fs::directory_iterator(dir.path)) {
      ++files;
      EXPECT_EQ(entry.path().filename(), "model.ckpt");
    }
    EXPECT_EQ(files, 1);
  }
  expect_equal_values(load_checkpoint(path, mlp(4, 0.0)), mlp(4, 1.0));
  // A successful write replaces it.
  save_checkpoint(mlp(4, 7.0), path);
  expect_equal_values(load_checkpoint(path, mlp(4, 0.0)), mlp(4, 7.0));
  // A missing directory is created with its parents; a file in its way is an error.
  write_file_atomic(dir / "no/such/dir/x", "abc");
  EXPECT_EQ(slurp(dir / "no/such/dir/x"), "abc");
  write_file_atomic(dir / "plain", "f");
  EXPECT_EQ(error_of([&] { write_file_atomic(dir / "plain/sub/x", "abc"); }),
            "cannot write '" + (dir / "plain/sub/x") + "': cannot create directory '" +
                (dir / "plain/sub") + "': Not a directory");
}

}  // namespace
}  // namespace spora::runtime::data
