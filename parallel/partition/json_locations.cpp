// Entry locations in a strategy file (json_locations.h).
#include "parallel/partition/json_locations.h"

#include <fmt/format.h>

#include <algorithm>

#include "lang/diagnostics.h"

namespace spora::parallel {

namespace {

char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    default:
      return c;  // \" \\ \/ (a \u escape keeps its hex digits: close enough for a key)
  }
}

}  // namespace

JsonLocations::JsonLocations(std::string origin, std::string text)
    : origin_(std::move(origin)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  struct Level {
    bool object = false, expect_key = false;
    std::string path, key;  // this container's path; the key of the member being read
  };
  std::vector<Level> stack;
  for (size_t i = 0; i < text_.size(); ++i) {
    const char c = text_[i];
    if (c == '"') {
      const size_t start = i;
      std::string s;
      for (++i; i < text_.size() && text_[i] != '"'; ++i) {
        if (text_[i] == '\\' && i + 1 < text_.size()) {
          s += unescape(text_[++i]);
        } else {
          s += text_[i];
        }
      }
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Level& l = stack.back();
        l.expect_key = false;
        l.key = s;
        if (stack.size() <= 2) offsets_.emplace(l.path + "/" + s, start);
      }
    } else if (c == '{' || c == '[') {
      std::string path = stack.empty() ? "" : stack.back().path + "/" + stack.back().key;
      stack.push_back(Level{c == '{', c == '{', std::move(path), ""});
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().object) {
      stack.back().expect_key = true;
    }
  }
}

void JsonLocations::line_col(size_t offset, size_t& line, size_t& col) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  line = static_cast<size_t>(it - line_starts_.begin());  // 1-based: the count of starts <= offset
  col = offset - line_starts_[line - 1] + 1;
}

std::string JsonLocations::at_offset(size_t offset) const {
  size_t line = 0, col = 0;
  line_col(std::min(offset, text_.size()), line, col);
  return fmt::format("{}:{}:{}", origin_, line, col);
}

std::string JsonLocations::at(const std::string& path) const {
  const auto it = offsets_.find(path);
  return it == offsets_.end() ? origin_ : at_offset(it->second);
}

std::string JsonLocations::quote(const std::string& path) const {
  const auto it = offsets_.find(path);
  if (it == offsets_.end()) return "";
  size_t line = 0, col = 0;
  line_col(it->second, line, col);
  const size_t begin = line_starts_[line - 1];
  const size_t end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  std::string text = text_.substr(begin, end - begin), caret;
  if (!text.empty() && text.back() == '\r') text.pop_back();
  for (size_t i = 0; i + 1 < col; ++i) caret += text[i] == '\t' ? '\t' : ' ';
  return fmt::format("\n{}\n{}^", text, caret);
}

std::vector<std::string> closest_first(const std::string& name, std::vector<std::string> known) {
  std::vector<std::pair<size_t, std::string>> ranked;
  for (std::string& k : known) ranked.emplace_back(lang::edit_distance(name, k), std::move(k));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (auto& [d, k] : ranked) out.push_back(std::move(k));
  return out;
}

}  // namespace spora::parallel
