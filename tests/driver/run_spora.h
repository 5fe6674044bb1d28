// Runs the built `spora` program for the driver tests: its exit status, stdout and stderr (and
// a test failure when a sanitizer build reports an error on stderr).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const std::string kSpora = std::string(SPORA_BINARY_DIR) + "/bin/spora";

struct RunResult {
  int status = -1;
  std::string out, err;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline RunResult run_spora(const std::string& args) {
  RunResult r;
  const fs::path tmp = fs::temp_directory_path() / ("spora_golden_" + std::to_string(::getpid()) +
                                                    "_" + std::to_string(std::rand()) + ".err");
  const std::string cmd = kSpora + " " + args + " 2>" + tmp.string();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(tmp);
  fs::remove(tmp);
  // In a sanitizer build (-DSPORA_SANITIZE=ON) a memory or undefined-behaviour error shows
  // on stderr; the exit status alone would hide it where the test expects a failure (a
  // sanitizer exits 1, like a user error) or skips one (IrRoundTrip).
  for (const char* marker :
       {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", ": runtime error: "}) {
    if (r.err.find(marker) != std::string::npos) {
      ADD_FAILURE() << "spora " << args << ": sanitizer report\n" << r.err;
      break;
    }
  }
  return r;
}

}  // namespace
