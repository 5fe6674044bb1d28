// Line editing for `spora repl` on a terminal, in the manner of readline's emacs keys: the
// cursor moves within the line (arrows, Home, End, Ctrl-A/E/B/F, Alt-B/F by word), text is
// inserted at the cursor and deleted either side of it (Backspace, Delete, Ctrl-D, Ctrl-K/U/W),
// Up and Down (Ctrl-P/N) walk the history, Ctrl-L clears the screen, Ctrl-C drops the line and
// Ctrl-D on an empty line ends the input. Lines wider than the terminal scroll sideways.
//
// LineEditor is the line and its keys without a terminal (tested by feeding it key bytes);
// read_line() drives it from a terminal in raw mode.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spora::tools {

class LineEditor {
 public:
  enum class Status {
    kEditing,  // the line goes on
    kDone,     // Enter: line() is the line
    kCancel,   // Ctrl-C: the line is dropped
    kEof,      // Ctrl-D on an empty line
    kClear,    // Ctrl-L: the terminal should clear its screen (the line goes on)
    kList,     // Tab with several completions and nothing more in common: show candidates()
  };
  // The names that start with a prefix (Tab completes the name before the cursor with them).
  using Completer = std::function<std::vector<std::string>(const std::string& prefix)>;
  void set_completer(Completer c) { completer_ = std::move(c); }
  const std::vector<std::string>& candidates() const { return candidates_; }

  explicit LineEditor(std::vector<std::string> history = {});

  // Starts a new, empty line (the history position returns to its end).
  void start();
  // Takes key bytes as a terminal sends them and applies every complete key among them; a key
  // cut at the end (an escape sequence in parts) waits for the next call. Stops at the first
  // key that ends the line or asks to clear; the bytes after it (the next lines of a paste)
  // wait for the next line's feed.
  Status feed(std::string_view bytes);
  // True while bytes wait: an unfinished key after kEditing; drop_pending() takes a lone
  // Escape as no key.
  bool pending() const { return !pending_.empty(); }
  void drop_pending() { pending_.clear(); }

  const std::string& line() const { return line_; }
  size_t cursor() const { return cursor_; }  // a byte offset into line(), at a code point
  // The number of code points before the cursor (its column, for characters one column wide).
  size_t cursor_column() const;
  // Appends a line to the history (an empty line or a repeat of the last one is not kept).
  void add_history(const std::string& line);
  const std::vector<std::string>& history() const { return history_; }

 private:
  Status key(std::string_view k);
  void insert(std::string_view text);
  size_t prev_char(size_t at) const;
  size_t next_char(size_t at) const;
  size_t prev_word(size_t at) const;
  size_t next_word(size_t at) const;
  void erase(size_t from, size_t to);
  void recall(size_t index);

  std::string line_;
  size_t cursor_ = 0;
  std::vector<std::string> history_;
  size_t position_ = 0;  // in history_; history_.size(): the line being written
  std::string draft_;     // the line being written, while the history is shown
  std::string pending_;   // bytes of an unfinished key
  Completer completer_;
  std::vector<std::string> candidates_;
  Status complete();
};

// Reads one line from the terminal on stdin with `prompt` (drawn on stderr), in raw mode for
// the duration of the call. Returns the line, "" with *cancelled set after Ctrl-C, and nothing
// at the end of input. The caller adds the line to the editor's history.
std::optional<std::string> read_line(LineEditor& editor, const std::string& prompt,
                                     bool* cancelled);

}  // namespace spora::tools
