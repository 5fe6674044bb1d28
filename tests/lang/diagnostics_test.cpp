// DiagnosticEngine formatting and SourceManager.
#include "lang/diagnostics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace spora::lang {
namespace {

SourceRange range(int file, int line, int col, int end_line, int end_col) {
  return {{file, line, col}, {file, end_line, end_col}};
}

TEST(SourceManager, LinesAndPaths) {
  SourceManager sm;
  int a = sm.add("a.sp", "first\nsecond\r\n\nlast");
  int b = sm.add("b.sp", "");
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(sm.file_count(), 2);
  EXPECT_EQ(sm.path(a), "a.sp");
  EXPECT_EQ(sm.line_text(a, 1), "first");
  EXPECT_EQ(sm.line_text(a, 2), "second");  // without its \r
  EXPECT_EQ(sm.line_text(a, 3), "");
  EXPECT_EQ(sm.line_text(a, 4), "last");
  EXPECT_EQ(sm.line_text(a, 5), "");
  EXPECT_EQ(sm.line_text(a, 0), "");
  EXPECT_EQ(sm.line_text(b, 1), "");
  EXPECT_EQ(sm.line_text(7, 1), "");
}

TEST(SourceManager, LoadReadsBytesAndReportsMissingFiles) {
  std::string path = ::testing::TempDir() + "spora_sm_test_" + std::to_string(::getpid()) + ".sp";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string("a\0b\nc", 5);
  }
  SourceManager sm;
  int f = sm.load(path);
  EXPECT_EQ(sm.text(f), std::string("a\0b\nc", 5));
  EXPECT_EQ(sm.line_text(f, 2), "c");
  std::remove(path.c_str());
  EXPECT_THROW(sm.load(path), std::runtime_error);
}

TEST(Diagnostics, CaretAndTildesUnderTheRange) {
  SourceManager sm;
  int f = sm.add("model.sp", "def f(x) {\n    return x @ w\n}\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 2, 12, 2, 17), "matmul shapes do not match: f32[64,784] @ f32[512,10]");
  EXPECT_EQ(d.format(d.diagnostics()[0]),
            "model.sp:2:12: error: matmul shapes do not match: f32[64,784] @ f32[512,10]\n"
            "    return x @ w\n"
            "           ^~~~~\n");
}

TEST(Diagnostics, SingleCharacterAndEmptyRangesGetACaretOnly) {
  SourceManager sm;
  int f = sm.add("a.sp", "let x = $\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 1, 9, 1, 10), "unexpected character '$'");
  d.error(range(f, 1, 9, 1, 9), "empty");
  EXPECT_EQ(d.format(d.diagnostics()[0]),
            "a.sp:1:9: error: unexpected character '$'\nlet x = $\n        ^\n");
  EXPECT_EQ(d.format(d.diagnostics()[1]), "a.sp:1:9: error: empty\nlet x = $\n        ^\n");
}

TEST(Diagnostics, TabsArePreservedInTheCaretLine) {
  SourceManager sm;
  int f = sm.add("t.sp", "\tlet\tx = y\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 1, 6, 1, 7), "unknown name 'x'");
  EXPECT_EQ(d.format(d.diagnostics()[0]),
            "t.sp:1:6: error: unknown name 'x'\n\tlet\tx = y\n\t   \t^\n");
}

TEST(Diagnostics, MultiLineRangeGetsTheCaretAlone) {
  SourceManager sm;
  int f = sm.add("m.sp", "let x = f(a,\n  b)\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 1, 9, 2, 5), "bad call");
  EXPECT_EQ(d.format(d.diagnostics()[0]), "m.sp:1:9: error: bad call\nlet x = f(a,\n        ^\n");
}

TEST(Diagnostics, MultiByteCharactersTakeOneColumnOnScreen) {
  SourceManager sm;
  int f = sm.add("u.sp", "let \xC3\xA9 = \"\xC3\xA9\xC3\xA9\" + 1\n");
  DiagnosticEngine d(sm);
  // The string literal: bytes 10..15 (1-based columns 10 to 16 exclusive).
  d.error(range(f, 1, 10, 1, 16), "strings cannot be added");
  EXPECT_EQ(d.format(d.diagnostics()[0]),
            "u.sp:1:10: error: strings cannot be added\n"
            "let \xC3\xA9 = \"\xC3\xA9\xC3\xA9\" + 1\n"
            "        ^~~~\n");
}

TEST(Diagnostics, ColumnPastTheEndOfTheLine) {
  SourceManager sm;
  int f = sm.add("e.sp", "let x =\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 1, 8, 1, 9), "expected an expression but found end of line");
  EXPECT_EQ(d.format(d.diagnostics()[0]),
            "e.sp:1:8: error: expected an expression but found end of line\nlet x =\n       ^\n");
}

TEST(Diagnostics, SeveritiesAndLocationlessDiagnostics) {
  SourceManager sm;
  int f = sm.add("w.sp", "abc\n");
  DiagnosticEngine d(sm);
  d.warning(range(f, 1, 1, 1, 4), "unused");
  d.note(range(f, 1, 2, 1, 3), "here");
  d.error(SourceRange{}, "no location");
  EXPECT_EQ(d.format(d.diagnostics()[0]), "w.sp:1:1: warning: unused\nabc\n^~~\n");
  EXPECT_EQ(d.format(d.diagnostics()[1]), "w.sp:1:2: note: here\nabc\n ^\n");
  EXPECT_EQ(d.format(d.diagnostics()[2]), "error: no location\n");
  EXPECT_EQ(d.error_count(), 1);
  EXPECT_TRUE(d.has_errors());
}

TEST(Diagnostics, PrintWritesEveryDiagnosticInOrder) {
  SourceManager sm;
  int f = sm.add("p.sp", "a\nb\n");
  DiagnosticEngine d(sm);
  d.error(range(f, 2, 1, 2, 2), "second line");
  d.error(range(f, 1, 1, 1, 2), "first line");
  std::ostringstream os;
  d.print(os);
  EXPECT_EQ(os.str(), "p.sp:2:1: error: second line\nb\n^\np.sp:1:1: error: first line\na\n^\n");
}

TEST(Diagnostics, ErrorLimitCountsButStopsStoring) {
  SourceManager sm;
  int f = sm.add("l.sp", "x\n");
  DiagnosticEngine d(sm);
  d.set_error_limit(2);
  for (int i = 0; i < 5; ++i) {
    d.error(range(f, 1, 1, 1, 2), "e" + std::to_string(i));
    d.note(range(f, 1, 1, 1, 2), "n" + std::to_string(i));
  }
  EXPECT_EQ(d.error_count(), 5);
  ASSERT_EQ(d.diagnostics().size(), 4u);  // e0 n0 e1 n1
  EXPECT_EQ(d.diagnostics()[3].message, "n1");
  std::ostringstream os;
  d.print(os);
  EXPECT_NE(os.str().find("error: too many errors (2 shown, 5 in total)\n"), std::string::npos);
}

// The same error at the same place (a function lowered twice, for a call and for grad) is
// stored once, with its notes; error_count() still sees every report, so that a phase that
// compares it before and after a step stops as it did.
TEST(Diagnostics, RepeatedErrorsAreShownOnce) {
  SourceManager sm;
  int f = sm.add("r.sp", "let x = y\n");
  DiagnosticEngine d(sm);
  for (int i = 0; i < 3; ++i) {
    d.error(range(f, 1, 9, 1, 10), "unknown name 'y'");
    d.note(range(f, 1, 1, 1, 4), "in this let");
  }
  d.error(range(f, 1, 9, 1, 10), "another message");  // same place, another error
  d.error(range(f, 1, 1, 1, 4), "unknown name 'y'");  // same message, another place
  EXPECT_EQ(d.error_count(), 5);
  EXPECT_EQ(d.distinct_error_count(), 3);
  ASSERT_EQ(d.diagnostics().size(), 4u);  // the first error and its note, then the two others
  EXPECT_EQ(d.diagnostics()[1].message, "in this let");
  EXPECT_EQ(d.diagnostics()[2].message, "another message");
  // Past the limit, the total printed counts distinct errors too.
  DiagnosticEngine limited(sm);
  limited.set_error_limit(1);
  for (int i = 0; i < 3; ++i) limited.error(range(f, 1, 9, 1, 10), "unknown name 'y'");
  limited.error(range(f, 1, 9, 1, 10), "another message");
  EXPECT_EQ(limited.diagnostics().size(), 1u);
  std::ostringstream os;
  limited.print(os);
  EXPECT_NE(os.str().find("error: too many errors (1 shown, 2 in total)\n"), std::string::npos);
}

// A probe's errors (a type that may not resolve yet) are neither stored nor counted, so that
// the count printed after them ("N errors generated") is the count printed.
TEST(Diagnostics, QuietProbesLeaveNoCount) {
  SourceManager sm;
  int f = sm.add("q.sp", "x\n");
  DiagnosticEngine d(sm);
  {
    const DiagnosticEngine::Quiet probe(d);
    d.error(range(f, 1, 1, 1, 2), "unknown dimension 'N'");
    d.note(range(f, 1, 1, 1, 2), "declared here");
  }
  EXPECT_EQ(d.error_count(), 0);
  EXPECT_TRUE(d.diagnostics().empty());
  d.error(range(f, 1, 1, 1, 2), "real");
  EXPECT_EQ(d.error_count(), 1);
  ASSERT_EQ(d.diagnostics().size(), 1u);
  EXPECT_EQ(d.diagnostics()[0].message, "real");
}

}  // namespace
}  // namespace spora::lang
