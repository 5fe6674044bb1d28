// Writes the binary seeds of the fuzz corpora with Spora's own writers: `fuzz_seeds DIR` fills
// DIR/npy, DIR/idx and DIR/checkpoint with small valid files of every dtype the format has
// (and, for .npy, Fortran order and big-endian variants). seed_corpora.sh runs it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/runtime/data/checkpoint.h"
#include "backends/runtime/data/idx.h"
#include "backends/runtime/data/npy.h"
#include "tests/fuzz/checkpoint_model.h"

namespace {

namespace fs = std::filesystem;
using spora::DType;
using spora::sem::Tensor;

Tensor ramp(DType d, spora::sem::Shape s) {
  Tensor t = Tensor::empty(d, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i % 3));
  return t;
}

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  if (const size_t at = s.find(from); at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  using namespace spora::runtime::data;
  const fs::path dir = argv[1];
  for (const char* sub : {"npy", "idx", "checkpoint"}) fs::create_directories(dir / sub);

  const std::pair<DType, spora::sem::Shape> npy[] = {
      {DType::f32, {2, 3}}, {DType::f64, {4}},     {DType::i32, {}},
      {DType::i64, {2, 2}}, {DType::boolean, {3}}, {DType::f16, {1, 2, 2}}};
  int n = 0;
  for (const auto& [d, s] : npy) {
    const std::string bytes = npy_bytes(ramp(d, s), "seed.npy");
    put(dir / "npy" / ("seed" + std::to_string(n++) + ".npy"), bytes);
    if (d == DType::f32) {
      put(dir / "npy" / "fortran.npy", replaced(bytes, "False", "True "));
      put(dir / "npy" / "big_endian.npy", replaced(bytes, "<f4", ">f4"));
    }
  }

  const std::pair<DType, spora::sem::Shape> idx[] = {
      {DType::f32, {2, 3}}, {DType::f64, {3}}, {DType::i32, {2, 2}}, {DType::boolean, {4, 2}}};
  n = 0;
  for (const auto& [d, s] : idx)
    put(dir / "idx" / ("seed" + std::to_string(n++) + ".idx"), idx_bytes(ramp(d, s), "seed.idx"));
  // i8 and i16 files (type bytes 0x09, 0x0B), which Spora reads but does not write.
  put(dir / "idx" / "i8.idx", std::string("\0\0\x09\x01\0\0\0\x03\x01\xff\x7f", 11));
  put(dir / "idx" / "i16.idx", std::string("\0\0\x0b\x01\0\0\0\x02\x01\x00\xff\xfe", 12));

  put(dir / "checkpoint" / "model.ckpt",
      checkpoint_bytes(spora::fuzz::checkpoint_model(), "seed.ckpt"));
  return 0;
}
