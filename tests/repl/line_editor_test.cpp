// The REPL's line editor (tools/line_editor.h) fed the bytes a terminal sends for each key.
#include "tools/line_editor.h"

#include <gtest/gtest.h>

namespace spora::tools {
namespace {

using Status = LineEditor::Status;

const char* kLeft = "\x1b[D";
const char* kRight = "\x1b[C";
const char* kUp = "\x1b[A";
const char* kDown = "\x1b[B";

std::string keys(std::initializer_list<std::string> ks) {
  std::string s;
  for (const auto& k : ks) s += k;
  return s;
}

TEST(LineEditor, InsertsAtTheCursorAfterMovingLeftAndRight) {
  LineEditor ed;
  EXPECT_EQ(ed.feed(keys({"x + 1", kLeft, kLeft, kLeft, "2 * "})), Status::kEditing);
  EXPECT_EQ(ed.line(), "x 2 * + 1");
  EXPECT_EQ(ed.cursor(), 6u);
  EXPECT_EQ(ed.feed(keys({kRight, kRight, "0"})), Status::kEditing);
  EXPECT_EQ(ed.line(), "x 2 * + 01");
  EXPECT_EQ(ed.feed("\r"), Status::kDone);
}

TEST(LineEditor, HomeEndAndTheirControlKeysInEveryEncoding) {
  for (const auto& [home, end] : std::vector<std::pair<std::string, std::string>>{
           {"\x01", "\x05"}, {"\x1b[H", "\x1b[F"}, {"\x1bOH", "\x1bOF"}, {"\x1b[1~", "\x1b[4~"},
           {"\x1b[7~", "\x1b[8~"}}) {
    LineEditor ed;
    ed.feed("bc" + home + "a" + end + "d");
    EXPECT_EQ(ed.line(), "abcd") << "home " << home.size() << " end " << end.size();
  }
}

TEST(LineEditor, DeletesEitherSideOfTheCursor) {
  LineEditor ed;
  ed.feed(keys({"abcdef", kLeft, kLeft, "\x7f"}));  // Backspace
  EXPECT_EQ(ed.line(), "abcef");
  ed.feed("\x1b[3~");  // Delete
  EXPECT_EQ(ed.line(), "abcf");
  ed.feed("\x04");  // Ctrl-D on a line that is not empty deletes
  EXPECT_EQ(ed.line(), "abc");
  ed.feed(keys({kLeft, kLeft, "\x0b"}));  // Ctrl-K: to the end
  EXPECT_EQ(ed.line(), "a");
  ed.feed(keys({"xyz", kLeft, "\x15"}));  // Ctrl-U: to the start
  EXPECT_EQ(ed.line(), "z");
  EXPECT_EQ(ed.cursor(), 0u);
}

TEST(LineEditor, WordsMoveAndDelete) {
  LineEditor ed;
  ed.feed("let total = sum(x)");
  ed.feed("\x17");  // Ctrl-W: the word before, up to a space
  EXPECT_EQ(ed.line(), "let total = ");
  ed.feed("\x1b" "b");  // Alt-B: to the start of `total`
  EXPECT_EQ(ed.cursor(), 4u);
  ed.feed("\x1b[1;5D");  // Ctrl-Left
  EXPECT_EQ(ed.cursor(), 0u);
  ed.feed("\x1b" "f");  // Alt-F: after `let`
  EXPECT_EQ(ed.cursor(), 3u);
  ed.feed("\x1b" "d");  // Alt-D: the word after
  EXPECT_EQ(ed.line(), "let = ");
}

TEST(LineEditor, HistoryWalksBackAndReturnsToTheDraft) {
  LineEditor ed({"first", "second"});
  ed.start();
  ed.feed("dra");
  ed.feed(kUp);
  EXPECT_EQ(ed.line(), "second");
  ed.feed(kUp);
  ed.feed(kUp);  // stays at the oldest
  EXPECT_EQ(ed.line(), "first");
  EXPECT_EQ(ed.cursor(), 5u);
  ed.feed("\x0e");  // Ctrl-N
  EXPECT_EQ(ed.line(), "second");
  ed.feed(kDown);
  EXPECT_EQ(ed.line(), "dra");
  ed.add_history("third");
  ed.add_history("third");  // a repeat is not kept
  ed.add_history("   ");
  EXPECT_EQ(ed.history(), (std::vector<std::string>{"first", "second", "third"}));
}

TEST(LineEditor, EndsOnEnterCancelAndEndOfInput) {
  LineEditor ed;
  EXPECT_EQ(ed.feed("abc\x03"), Status::kCancel);
  ed.start();
  EXPECT_EQ(ed.feed("\x04"), Status::kEof);  // Ctrl-D on an empty line
  ed.start();
  EXPECT_EQ(ed.feed("\x0c"), Status::kClear);  // Ctrl-L
  EXPECT_EQ(ed.feed("y\n"), Status::kDone);
  EXPECT_EQ(ed.line(), "y");
}

TEST(LineEditor, KeysSplitAcrossReadsAndPastedLines) {
  LineEditor ed;
  ed.feed("ab\x1b");
  EXPECT_TRUE(ed.pending());
  ed.feed("[");
  ed.feed("D");  // Left, in three reads
  EXPECT_FALSE(ed.pending());
  ed.feed("X");
  EXPECT_EQ(ed.line(), "aXb");
  ed.feed("\xc3");  // half of a two-byte character
  EXPECT_EQ(ed.line(), "aXb");
  ed.feed("\xa9");
  EXPECT_EQ(ed.line(), "aX\xc3\xa9" "b");
  // A paste of two lines: the second waits for the next line.
  ed.start();
  EXPECT_EQ(ed.feed("one\rtwo\r"), Status::kDone);
  EXPECT_EQ(ed.line(), "one");
  ed.start();
  EXPECT_EQ(ed.feed(""), Status::kDone);
  EXPECT_EQ(ed.line(), "two");
  // A lone Escape is dropped.
  ed.start();
  ed.feed("\x1b");
  ed.drop_pending();
  ed.feed("q");
  EXPECT_EQ(ed.line(), "q");
}

TEST(LineEditor, MovesOverMultiByteCharactersWhole) {
  LineEditor ed;
  ed.feed(keys({"\xce\xb1\xce\xb2", kLeft}));  // αβ, cursor before β
  EXPECT_EQ(ed.cursor(), 2u);
  EXPECT_EQ(ed.cursor_column(), 1u);
  ed.feed("\x7f");
  EXPECT_EQ(ed.line(), "\xce\xb2");
  ed.feed(keys({"\x05", "\t"}));  // Tab after a space: indentation
  EXPECT_EQ(ed.line(), "\xce\xb2    ");
}

TEST(LineEditor, TabCompletesTheNameBeforeTheCursor) {
  LineEditor ed;
  std::vector<std::string> asked;
  ed.set_completer([&](const std::string& prefix) {
    asked.push_back(prefix);
    std::vector<std::string> out;
    for (const char* n : {"softmax", "softplus", "sum", "total"})
      if (std::string(n).rfind(prefix, 0) == 0) out.push_back(n);
    return out;
  });
  EXPECT_EQ(ed.feed("print(to\t"), Status::kEditing);  // one match: the whole name
  EXPECT_EQ(ed.line(), "print(total");
  ed.start();
  EXPECT_EQ(ed.feed("so\t"), Status::kEditing);  // two matches: their common part
  EXPECT_EQ(ed.line(), "soft");
  EXPECT_EQ(ed.feed("\t"), Status::kList);  // nothing more in common: list them
  EXPECT_EQ(ed.candidates(), (std::vector<std::string>{"softmax", "softplus"}));
  EXPECT_EQ(ed.feed("m\t"), Status::kEditing);
  EXPECT_EQ(ed.line(), "softmax");
  ed.start();
  ed.feed("nn.to\t");  // after a '.': a member, not completed
  ed.feed(keys({"\x01", "\t"}));  // at the start: indentation
  EXPECT_EQ(ed.line(), "    nn.to");
  EXPECT_EQ(asked, (std::vector<std::string>{"to", "so", "soft", "softm"}));
}

}  // namespace
}  // namespace spora::tools
