// tests/negative/syntax_*.sp: each file's `# expected-error@+N: text` annotations match the
// parser's errors exactly (same lines, message contains the text, no other error).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

struct Expected {
  int line;
  std::string text;
};

std::vector<Expected> annotations(const std::string& source) {
  std::vector<Expected> out;
  std::istringstream in(source);
  std::string line;
  const std::string marker = "# expected-error@+";
  for (int number = 1; std::getline(in, line); ++number) {
    size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    size_t colon = line.find(": ", at);
    int offset = std::stoi(line.substr(at + marker.size(), colon - at - marker.size()));
    out.push_back({number + offset, line.substr(colon + 2)});
  }
  return out;
}

TEST(NegativeSyntaxFiles, DiagnosticsMatchTheirAnnotations) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(SPORA_SOURCE_DIR "/tests/negative")) {
    std::string name = entry.path().filename().string();
    if (name.rfind("syntax_", 0) == 0 && entry.path().extension() == ".sp") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 10u);
  for (const auto& path : files) {
    SourceManager sources;
    DiagnosticEngine diags(sources);
    int file = sources.load(path.string());
    auto module = parse_file(sources, file, diags);
    EXPECT_EQ(module, nullptr) << path;
    std::vector<Expected> expected = annotations(sources.text(file));
    ASSERT_FALSE(expected.empty()) << path << " has no expected-error annotation";
    std::ostringstream shown;
    diags.print(shown);
    std::vector<Diagnostic> errors;  // notes ("to match this '('") are not annotated
    for (const Diagnostic& d : diags.diagnostics()) {
      if (d.severity == Severity::Error) errors.push_back(d);
    }
    ASSERT_EQ(errors.size(), expected.size()) << path << "\n" << shown.str();
    for (size_t i = 0; i < expected.size(); ++i) {
      const Diagnostic& d = errors[i];
      EXPECT_EQ(d.range.begin.line, expected[i].line) << path << "\n" << shown.str();
      EXPECT_NE(d.message.find(expected[i].text), std::string::npos)
          << path << ": '" << d.message << "' does not contain '" << expected[i].text << "'";
    }
  }
}

}  // namespace
}  // namespace spora::lang::testing
