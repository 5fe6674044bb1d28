// Where the entries of a strategy file are, so that its errors say file:line:col.
//
// nlohmann::json keeps no positions, so the text is scanned once more: a small tokenizer that
// follows strings, objects and arrays and records where each object key of the top two levels
// starts ("/mesh", "/layouts/net.l1.w", "/ops/12"; keys as decoded JSON strings). Only called
// on text that already parsed, so it assumes well-formed JSON.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace spora::parallel {

class JsonLocations {
 public:
  JsonLocations(std::string origin, std::string text);

  // "s.json:3:5" for the entry at `path` (see above); `origin` alone when it is not found.
  std::string at(const std::string& path) const;
  // The same, then the entry's line and a caret under its start: the suffix of a
  // diagnostic, "\n  \"x\": \"(3, 1)\"\n  ^". Empty when the path is not found.
  std::string quote(const std::string& path) const;
  // "s.json:3:5" of a byte offset (a JSON parse error's position).
  std::string at_offset(size_t offset) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_, text_;
  std::map<std::string, size_t> offsets_;  // path -> byte offset of the key's opening quote
  std::vector<size_t> line_starts_;
  void line_col(size_t offset, size_t& line, size_t& col) const;
};

// `known` ordered by edit distance to `name` (closest first; ties keep their order).
std::vector<std::string> closest_first(const std::string& name, std::vector<std::string> known);

}  // namespace spora::parallel
