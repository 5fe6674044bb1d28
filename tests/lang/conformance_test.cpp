// The conformance programs pin the language contract: what parses, what it means, what print
// shows. tests/conformance/ holds them with their expected output (run by the golden tests);
// here, every one in tests/lang/data parses without a diagnostic, every node has a range, and
// printing is deterministic.
#include <gtest/gtest.h>

#include <filesystem>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

std::vector<std::string> conformance_files() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(SPORA_SOURCE_DIR "/tests/lang/data")) {
    if (entry.path().extension() == ".sp") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Conformance, AllFourteenProgramsParse) {
  std::vector<std::string> files = conformance_files();
  EXPECT_EQ(files.size(), 14u);
  for (const std::string& path : files) {
    SourceManager sources;
    DiagnosticEngine diags(sources);
    auto module = parse_file(sources, sources.load(path), diags);
    std::ostringstream shown;
    diags.print(shown);
    ASSERT_NE(module, nullptr) << path << "\n" << shown.str();
    EXPECT_TRUE(diags.diagnostics().empty()) << path << "\n" << shown.str();
    EXPECT_FALSE(module->functions.empty()) << path;
    for_each_range(*module, [&](const std::string& what, const SourceRange& r) {
      EXPECT_TRUE(r.valid()) << path << ": " << what;
    });
    // Printing twice gives the same text, and a second parse prints the same too.
    auto again = parse_file(sources, sources.load(path), diags);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(print_ast(*module), print_ast(*again)) << path;
  }
}

}  // namespace
}  // namespace spora::lang::testing
