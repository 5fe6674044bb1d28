// libFuzzer target over the checkpoint reader (backends/runtime/data/checkpoint.h), for the
// model of checkpoint_model.h: any bytes give the model's value or a lang::UserError
// naming the file, never a crash, a hang or a sanitizer report. Each input is read as it is,
// and again with both CRC fields recomputed, so the fuzzer also reaches the header text and
// the structure checks behind the checksums.
#include <cstring>

#include "backends/runtime/data/checkpoint.h"
#include "backends/runtime/data/files.h"
#include "tests/fuzz/checkpoint_model.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void parse(const std::string& bytes, const spora::sem::Value& like) {
  spora::fuzz::allow_user_error(
      [&] { (void)spora::runtime::data::parse_checkpoint(bytes, "fuzz.ckpt", like); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::runtime::data;
  static const spora::sem::Value like = spora::fuzz::checkpoint_model();
  std::string bytes = spora::fuzz::text(data, size);
  parse(bytes, like);
  if (bytes.size() >= 32) {
    auto* p = reinterpret_cast<uint8_t*>(bytes.data());
    store_le32(p + 24, crc32_of(p, 24));
    store_le32(p + bytes.size() - 4, crc32_of(p, bytes.size() - 4));
    parse(bytes, like);
  }
  return 0;
}
