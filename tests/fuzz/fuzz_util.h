// Helpers of the libFuzzer targets: the input as text, or as a file for readers that take a
// path (a scratch file of this process, in /dev/shm when there is one); a run in which a
// lang::UserError is the expected clean failure.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "lang/diagnostics.h"

namespace spora::fuzz {

// Runs f; a lang::UserError (a reader's located message about bad input) is a clean outcome,
// anything else escapes and libFuzzer reports it.
template <class F>
void allow_user_error(F&& f) {
  try {
    f();
  } catch (const lang::UserError&) {
  }
}

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes the input to this process's scratch file and returns its path (the same path every
// call; the file is overwritten).
inline const std::string& scratch_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                  "/spora_fuzz_" + std::to_string(getpid()) + suffix;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace spora::fuzz
