// libFuzzer target over the idx reader of MNIST files (backends/runtime/data/idx.h), plain or
// gzip: any file gives a tensor or a lang::UserError naming the file, never a crash, a hang or
// a sanitizer report.
#include "backends/runtime/data/idx.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::runtime::data;
  const std::string& path = spora::fuzz::scratch_file(data, size, ".idx");
  spora::fuzz::allow_user_error([&] { (void)read_idx_header(path); });
  spora::fuzz::allow_user_error([&] { (void)read_idx(path); });
  spora::fuzz::allow_user_error([&] {
    IdxHeader h;
    (void)read_idx_u8(path, h);
  });
  return 0;
}
