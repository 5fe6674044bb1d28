// Golden logs of the simulator's tests, compared line by line. With SPORA_UPDATE_GOLDEN set the
// test rewrites the file instead (and is skipped): review the diff.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace spora::sim::testing {

inline const std::string kGoldenData = SPORA_SOURCE_DIR "/tests/sim/data/";

// `file` is under tests/sim/data/. GTEST_SKIP and ASSERT_* return from this function only:
// call it last in a test.
inline void compare_with_golden(const std::vector<std::string>& log, const std::string& file) {
  const std::string path = kGoldenData + file;
  if (std::getenv("SPORA_UPDATE_GOLDEN")) {
    std::ofstream out(path);
    for (const std::string& line : log) out << line << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  for (std::size_t i = 0; i < std::max(log.size(), expected.size()); ++i) {
    const std::string got = i < log.size() ? log[i] : "(end of log)";
    const std::string want = i < expected.size() ? expected[i] : "(end of golden file)";
    ASSERT_EQ(got, want) << file << ":" << i + 1;
  }
}

}  // namespace spora::sim::testing
