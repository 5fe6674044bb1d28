// libFuzzer target over the .npy reader (backends/runtime/data/npy.h), plain or gzip: any file
// gives a tensor or a lang::UserError naming the file, never a crash, a hang or a sanitizer
// report.
#include "backends/runtime/data/npy.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::runtime::data;
  const std::string& path = spora::fuzz::scratch_file(data, size, ".npy");
  spora::fuzz::allow_user_error([&] { (void)read_npy_header(path); });
  spora::fuzz::allow_user_error([&] { (void)read_npy(path); });
  return 0;
}
