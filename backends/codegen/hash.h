// A stable 128-bit hash of text as 32 hex digits (two FNV-1a 64 streams with different
// offsets): kernel names and cache file names. Not cryptographic; stable across runs,
// processes and machines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spora::codegen {

inline std::string hash_hex(std::string_view text) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = digits[(a >> (60 - 4 * i)) & 0xf];
    out[16 + i] = digits[(b >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

}  // namespace spora::codegen
