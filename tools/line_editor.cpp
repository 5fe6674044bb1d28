// Line editing for `spora repl` on a terminal (line_editor.h).
#include "tools/line_editor.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace spora::tools {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
bool is_word(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
         c == '_';
}

// The length of the key at the start of `s` (0: cut short, more bytes needed).
size_t key_length(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  if (c == 0x1b) {
    if (s.size() < 2) return 0;
    if (s[1] == '[') {  // CSI: parameters, then a final byte in 0x40-0x7e
      for (size_t i = 2; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b >= 0x40 && b <= 0x7e) return i + 1;
      }
      return 0;
    }
    if (s[1] == 'O') return s.size() < 3 ? 0 : 3;  // SS3: ESC O H, ESC O A ...
    return 2;                                       // Alt + key
  }
  size_t n = 1;
  if (c >= 0xF0)
    n = 4;
  else if (c >= 0xE0)
    n = 3;
  else if (c >= 0xC0)
    n = 2;
  return s.size() < n ? 0 : n;
}

}  // namespace

LineEditor::LineEditor(std::vector<std::string> history)
    : history_(std::move(history)), position_(history_.size()) {}

void LineEditor::start() {
  line_.clear();
  draft_.clear();
  cursor_ = 0;
  position_ = history_.size();
}

size_t LineEditor::cursor_column() const {
  size_t n = 0;
  for (size_t i = 0; i < cursor_; ++i)
    if (!is_continuation(line_[i])) ++n;
  return n;
}

void LineEditor::add_history(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  if (!history_.empty() && history_.back() == line) return;
  history_.push_back(line);
  position_ = history_.size();
}

size_t LineEditor::prev_char(size_t at) const {
  if (at == 0) return 0;
  --at;
  while (at > 0 && is_continuation(line_[at])) --at;
  return at;
}

size_t LineEditor::next_char(size_t at) const {
  if (at >= line_.size()) return line_.size();
  ++at;
  while (at < line_.size() && is_continuation(line_[at])) ++at;
  return at;
}

size_t LineEditor::prev_word(size_t at) const {
  while (at > 0 && !is_word(line_[at - 1])) --at;
  while (at > 0 && is_word(line_[at - 1])) --at;
  return at;
}

size_t LineEditor::next_word(size_t at) const {
  while (at < line_.size() && !is_word(line_[at])) ++at;
  while (at < line_.size() && is_word(line_[at])) ++at;
  return at;
}

void LineEditor::insert(std::string_view text) {
  line_.insert(cursor_, text);
  cursor_ += text.size();
}

void LineEditor::erase(size_t from, size_t to) {
  if (to <= from) return;
  line_.erase(from, to - from);
  cursor_ = from;
}

void LineEditor::recall(size_t index) {
  if (index > history_.size() || index == position_) return;
  if (position_ == history_.size()) draft_ = line_;
  position_ = index;
  line_ = index == history_.size() ? draft_ : history_[index];
  cursor_ = line_.size();
}

LineEditor::Status LineEditor::key(std::string_view k) {
  const auto c = static_cast<unsigned char>(k[0]);
  if (c == 0x1b) {
    if (k.size() == 2) {  // Alt + key
      if (k[1] == 'b' || k[1] == 'B') cursor_ = prev_word(cursor_);
      if (k[1] == 'f' || k[1] == 'F') cursor_ = next_word(cursor_);
      if (k[1] == 0x7f || k[1] == 0x08) erase(prev_word(cursor_), cursor_);
      if (k[1] == 'd' || k[1] == 'D') erase(cursor_, next_word(cursor_));
      return Status::kEditing;
    }
    const char final = k.back();
    const std::string_view params = k.substr(2, k.size() - 3);
    const bool ctrl = params.find(";5") != std::string_view::npos;  // ESC[1;5D: Ctrl-Left
    switch (final) {
      case 'A': recall(position_ == 0 ? 0 : position_ - 1); break;
      case 'B': recall(position_ + 1); break;
      case 'C': cursor_ = ctrl ? next_word(cursor_) : next_char(cursor_); break;
      case 'D': cursor_ = ctrl ? prev_word(cursor_) : prev_char(cursor_); break;
      case 'H': cursor_ = 0; break;
      case 'F': cursor_ = line_.size(); break;
      case '~':  // ESC[1~ / ESC[7~ Home, ESC[4~ / ESC[8~ End, ESC[3~ Delete
        if (params == "1" || params == "7") cursor_ = 0;
        if (params == "4" || params == "8") cursor_ = line_.size();
        if (params == "3") erase(cursor_, next_char(cursor_));
        break;
      default: break;
    }
    return Status::kEditing;
  }
  switch (c) {
    case 0x01: cursor_ = 0; break;                        // Ctrl-A
    case 0x02: cursor_ = prev_char(cursor_); break;       // Ctrl-B
    case 0x03: return Status::kCancel;                    // Ctrl-C
    case 0x04:                                            // Ctrl-D
      if (line_.empty()) return Status::kEof;
      erase(cursor_, next_char(cursor_));
      break;
    case 0x05: cursor_ = line_.size(); break;             // Ctrl-E
    case 0x06: cursor_ = next_char(cursor_); break;       // Ctrl-F
    case 0x08:                                            // Ctrl-H, Backspace
    case 0x7f: erase(prev_char(cursor_), cursor_); break;
    case 0x09: return complete();                         // Tab
    case 0x0a:
    case 0x0d: return Status::kDone;                      // Enter
    case 0x0b: erase(cursor_, line_.size()); break;       // Ctrl-K
    case 0x0c: return Status::kClear;                     // Ctrl-L
    case 0x0e: recall(position_ + 1); break;              // Ctrl-N
    case 0x10: recall(position_ == 0 ? 0 : position_ - 1); break;  // Ctrl-P
    case 0x15: erase(0, cursor_); break;                  // Ctrl-U
    case 0x17: {                                          // Ctrl-W: the word before
      size_t from = cursor_;
      while (from > 0 && line_[from - 1] == ' ') --from;
      while (from > 0 && line_[from - 1] != ' ') --from;
      erase(from, cursor_);
      break;
    }
    default:
      if (c >= 0x20) insert(k);  // other control characters do nothing
      break;
  }
  return Status::kEditing;
}

LineEditor::Status LineEditor::complete() {
  size_t start = cursor_;
  while (start > 0 && (is_word(line_[start - 1]) && static_cast<unsigned char>(line_[start - 1]) < 0x80))
    --start;
  const bool name = start < cursor_ && !(line_[start] >= '0' && line_[start] <= '9') &&
                    (start == 0 || line_[start - 1] != '.');
  if (!name || !completer_) {
    if (start == cursor_) insert("    ");  // indentation
    return Status::kEditing;
  }
  const std::string prefix = line_.substr(start, cursor_ - start);
  candidates_ = completer_(prefix);
  if (candidates_.empty()) return Status::kEditing;
  std::string common = candidates_[0];
  for (const std::string& c : candidates_) {
    size_t n = 0;
    while (n < common.size() && n < c.size() && common[n] == c[n]) ++n;
    common.resize(n);
  }
  if (common.size() > prefix.size()) {
    insert(std::string_view(common).substr(prefix.size()));
    return Status::kEditing;
  }
  return candidates_.size() > 1 ? Status::kList : Status::kEditing;
}

LineEditor::Status LineEditor::feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t at = 0;
  Status status = Status::kEditing;
  while (at < pending_.size() && status == Status::kEditing) {
    const size_t n = key_length(std::string_view(pending_).substr(at));
    if (n == 0) break;
    status = key(std::string_view(pending_).substr(at, n));
    at += n;
  }
  pending_.erase(0, at);  // after the end of a line: the next line's keys (a paste)
  return status;
}

namespace {

void put(const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t k = ::write(STDERR_FILENO, s.data() + at, s.size() - at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    at += static_cast<size_t>(k);
  }
}

size_t terminal_columns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

// The byte offset of code point `n` of `s`.
size_t byte_of(const std::string& s, size_t n) {
  size_t i = 0;
  for (; i < s.size(); ++i)
    if (!is_continuation(s[i]) && n-- == 0) break;
  return i;
}

// Redraws the prompt and the part of the line around the cursor that fits on one row.
void refresh(const LineEditor& ed, const std::string& prompt) {
  const size_t width = terminal_columns();
  const size_t room = width > prompt.size() + 2 ? width - prompt.size() - 1 : 1;
  const std::string& line = ed.line();
  size_t total = 0;
  for (char c : line)
    if (!is_continuation(c)) ++total;
  const size_t column = ed.cursor_column();
  size_t first = 0;
  if (total >= room && column >= room) first = column - room + 1;
  const size_t from = byte_of(line, first);
  const size_t to = byte_of(line, first + room);
  std::string out = "\r" + prompt + line.substr(from, to - from) + "\x1b[K\r";
  const size_t at = prompt.size() + column - first;
  if (at > 0) out += "\x1b[" + std::to_string(at) + "C";
  put(out);
}

// Raw mode on stdin while it lives (TCSADRAIN: keys typed ahead while a cell ran are kept).
class RawMode {
 public:
  RawMode() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    ok_ = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
  }
  ~RawMode() {
    if (ok_) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  termios saved_{};
  bool ok_ = false;
};

}  // namespace

std::optional<std::string> read_line(LineEditor& ed, const std::string& prompt, bool* cancelled) {
  *cancelled = false;
  RawMode raw;
  ed.start();
  LineEditor::Status status = ed.feed("");  // keys left from a paste of several lines
  for (;;) {
    if (status == LineEditor::Status::kClear) {
      put("\x1b[H\x1b[2J");
      status = LineEditor::Status::kEditing;
    }
    if (status == LineEditor::Status::kList) {  // the candidates under the line, then the line
      std::string list = "\r\n";
      for (const std::string& c : ed.candidates()) list += c + "  ";
      put(list + "\r\n");
      status = LineEditor::Status::kEditing;
    }
    refresh(ed, prompt);
    if (status != LineEditor::Status::kEditing) break;
    char buf[256];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      put("\r\n");
      return std::nullopt;
    }
    status = ed.feed(std::string_view(buf, static_cast<size_t>(n)));
    if (status == LineEditor::Status::kEditing && ed.pending()) {
      // A lone Escape, or the start of a sequence whose rest is on its way.
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) ed.drop_pending();
    }
  }
  switch (status) {
    case LineEditor::Status::kDone: put("\r\n"); return ed.line();
    case LineEditor::Status::kCancel:
      put("^C\r\n");
      *cancelled = true;
      return std::string();
    default: put("\r\n"); return std::nullopt;  // kEof
  }
}

}  // namespace spora::tools
