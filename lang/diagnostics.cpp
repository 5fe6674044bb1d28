// SourceManager and DiagnosticEngine (lang/diagnostics.h).
//
// The caret line under a quoted source line copies the source's tabs (so the caret lines up
// in any terminal) and writes one space per character before the range; UTF-8 continuation
// bytes take no column on screen, so they add no padding. For ASCII text that is exactly
// "spaces up to the begin column". A range that ends on its begin line gets `~` under the
// rest of it; a range running onto later lines gets the caret alone.
#include "lang/diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace spora::lang {

namespace {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Note:
      return "note";
  }
  return "error";
}

// Spaces (tabs where the source has tabs) covering source bytes [0, count).
std::string padding_for(std::string_view line, size_t count) {
  std::string pad;
  for (size_t i = 0; i < count; ++i) {
    char c = i < line.size() ? line[i] : ' ';
    if (c == '\t') {
      pad += '\t';
    } else if (!is_utf8_continuation(c)) {
      pad += ' ';
    }
  }
  return pad;
}

// Number of characters on screen in source bytes [from, to) of the line (bytes past the end
// of the line count one each).
size_t screen_width(std::string_view line, size_t from, size_t to) {
  size_t width = 0;
  for (size_t i = from; i < to; ++i) {
    if (i >= line.size() || !is_utf8_continuation(line[i])) ++width;
  }
  return width;
}

}  // namespace

// ---------------------------------------------------------------- SourceManager

int SourceManager::add(std::string path, std::string text, int hidden_lines) {
  File f;
  f.hidden = hidden_lines;
  f.path = std::move(path);
  f.text = std::move(text);
  f.line_starts.push_back(0);
  for (size_t i = 0; i < f.text.size(); ++i) {
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  }
  files_.push_back(std::move(f));
  return static_cast<int>(files_.size()) - 1;
}

int SourceManager::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read file '" + path + "'");
  return add(path, text.str());
}

std::string_view SourceManager::line_text(int file, int line) const {
  if (file < 0 || file >= file_count() || line < 1) return {};
  const File& f = files_[static_cast<size_t>(file)];
  if (static_cast<size_t>(line) > f.line_starts.size()) return {};
  size_t begin = f.line_starts[static_cast<size_t>(line) - 1];
  size_t end = static_cast<size_t>(line) < f.line_starts.size()
                   ? f.line_starts[static_cast<size_t>(line)] - 1  // the '\n'
                   : f.text.size();
  std::string_view text(f.text);
  std::string_view result = text.substr(begin, end - begin);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return result;
}

// ---------------------------------------------------------------- DiagnosticEngine

static bool same_place(const SourceRange& a, const SourceRange& b) {
  return a.begin.file == b.begin.file && a.begin.line == b.begin.line &&
         a.begin.col == b.begin.col && a.end.file == b.end.file && a.end.line == b.end.line &&
         a.end.col == b.end.col;
}

void DiagnosticEngine::error(SourceRange range, std::string message) {
  if (quiet_ > 0) return;
  ++error_count_;
  const auto same = [&](const Diagnostic& d) {
    return d.severity == Severity::Error && d.message == message && same_place(d.range, range);
  };
  dropping_notes_ = std::any_of(diags_.begin(), diags_.end(), same);
  if (dropping_notes_) {
    ++repeated_;
    return;
  }
  if (error_count_ - repeated_ > error_limit_) return;
  diags_.push_back({Severity::Error, range, std::move(message)});
}

void DiagnosticEngine::warning(SourceRange range, std::string message) {
  dropping_notes_ = false;
  diags_.push_back({Severity::Warning, range, std::move(message)});
}

void DiagnosticEngine::note(SourceRange range, std::string message) {
  // Past the limit every error is dropped, and so are the notes that explain them.
  if (quiet_ > 0 || dropping_notes_ || distinct_error_count() > error_limit_) return;
  diags_.push_back({Severity::Note, range, std::move(message)});
}

std::string DiagnosticEngine::format(const Diagnostic& d) const {
  const SourceLoc& b = d.range.begin;
  bool known_file = b.file >= 0 && b.file < sources_.file_count();
  std::string out;
  if (known_file) {
    out += sources_.path(b.file);
    if (b.line > 0)
      out += ":" + std::to_string(sources_.shown_line(b.file, b.line)) + ":" + std::to_string(b.col);
    out += ": ";
  }
  out += severity_name(d.severity);
  out += ": ";
  out += d.message;
  out += '\n';
  if (!known_file || b.line <= 0) return out;

  std::string_view line = sources_.line_text(b.file, b.line);
  size_t begin_byte = b.col > 0 ? static_cast<size_t>(b.col - 1) : 0;
  out += line;
  out += '\n';
  out += padding_for(line, begin_byte);
  out += '^';
  const SourceLoc& e = d.range.end;
  if (e.file == b.file && e.line == b.line && e.col > b.col + 1) {
    size_t end_byte = static_cast<size_t>(e.col - 1);
    out += std::string(screen_width(line, begin_byte + 1, end_byte), '~');
  }
  out += '\n';
  return out;
}

void DiagnosticEngine::print(std::ostream& os) const {
  for (const Diagnostic& d : diags_) os << format(d);
  if (distinct_error_count() > error_limit_) {
    os << "error: too many errors (" << error_limit_ << " shown, " << distinct_error_count()
       << " in total)\n";
  }
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace spora::lang
