#include "parallel/collectives/text.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <vector>

namespace spora::parallel {

std::string format_region(const Region& r) {
  return fmt::format("{}[{}:{}]", buffer_name(r.buffer), r.offset, r.end());
}

std::string format_step(const Step& s) {
  std::string out = fmt::format("{}: {}", s.id, step_kind_name(s.kind));
  switch (s.kind) {
    case StepKind::Send:
      out += fmt::format(" to {} {}", s.peer, format_region(s.src));
      break;
    case StepKind::Recv:
    case StepKind::RecvReduce:
      out += fmt::format(" from {} {}", s.peer, format_region(s.dst));
      break;
    case StepKind::Copy:
    case StepKind::LocalReduce:
      out += fmt::format(" {} -> {}", format_region(s.src), format_region(s.dst));
      break;
  }
  if (!s.deps.empty()) {
    out += " after";
    for (int d : s.deps) out += fmt::format(" {}", d);
  }
  return out;
}

std::string print_schedule(const Schedule& s) {
  std::string out = fmt::format(
      "schedule {} ranks={} count={} op={} root={} algorithm={} chunks={} ranks-per-node={}",
      collective_name(s.spec.collective), s.spec.ranks, s.spec.count, reduce_op_name(s.spec.op),
      s.spec.root, s.algorithm.empty() ? "custom" : s.algorithm, s.options.chunks,
      s.options.ranks_per_node);
  if (s.options.channels != 1) out += fmt::format(" channels={}", s.options.channels);
  out += "\n";
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    out += fmt::format("rank {} scratch={}\n", r, s.ranks[r].scratch_count);
    for (const Step& step : s.ranks[r].steps) out += "  " + format_step(step) + "\n";
  }
  return out;
}

namespace {

// A cursor over one line, with errors that point at a column.
class Line {
 public:
  // `text` is what is parsed (the line without its comment); errors show `display`.
  Line(std::string_view filename, int number, std::string_view text, std::string_view display)
      : filename_(filename), number_(number), text_(text), display_(display) {}

  [[noreturn]] void fail(const std::string& message, std::size_t column) const {
    throw ScheduleParseError(fmt::format("{}:{}:{}: error: {}\n{}\n{}^", filename_, number_,
                                         column + 1, message, display_, std::string(column, ' ')));
  }
  [[noreturn]] void fail(const std::string& message) const { fail(message, token_start_); }

  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  // The next whitespace-separated word, or the word up to one of `stops`.
  std::string_view word(std::string_view stops = "") {
    skip_space();
    token_start_ = pos_;
    std::size_t end = pos_;
    while (end < text_.size() && !std::isspace(static_cast<unsigned char>(text_[end])) &&
           stops.find(text_[end]) == std::string_view::npos)
      ++end;
    std::string_view w = text_.substr(pos_, end - pos_);
    pos_ = end;
    return w;
  }
  void expect(std::string_view literal) {
    skip_space();
    token_start_ = pos_;
    if (text_.substr(pos_, literal.size()) != literal) fail(fmt::format("expected '{}'", literal));
    pos_ += literal.size();
  }
  bool accept(std::string_view literal) {
    skip_space();
    if (text_.substr(pos_, literal.size()) != literal) return false;
    token_start_ = pos_;
    pos_ += literal.size();
    return true;
  }
  std::int64_t integer(std::string_view what) {
    std::string_view w = word(":]=");
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
    if (w.empty() || ec != std::errc() || end != w.data() + w.size())
      fail(fmt::format("expected {} (an integer), found '{}'", what, w));
    return value;
  }
  Region region() {
    std::string_view name = word("[");
    const std::size_t column = token_start_;
    Region r;
    if (name == "input")
      r.buffer = BufferKind::Input;
    else if (name == "output")
      r.buffer = BufferKind::Output;
    else if (name == "scratch")
      r.buffer = BufferKind::Scratch;
    else
      fail(fmt::format("expected a region like output[0:4], found '{}'", name), column);
    expect("[");
    const std::int64_t begin = integer("a region start");
    expect(":");
    const std::int64_t end = integer("a region end");
    expect("]");
    if (begin < 0 || end < begin)
      fail(fmt::format("region {}[{}:{}] is empty-backwards or negative", name, begin, end),
           column);
    r.offset = begin;
    r.count = end - begin;
    return r;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string_view filename_;
  int number_;
  std::string_view text_, display_;
  std::size_t pos_ = 0, token_start_ = 0;
};

void parse_header(Line& line, Schedule& s) {
  std::string_view name = line.word();
  auto collective = parse_collective(name);
  if (!collective) line.fail(fmt::format("unknown collective '{}'", name));
  s.spec.collective = *collective;
  s.algorithm = "custom";
  while (!line.at_end()) {
    std::string_view key = line.word("=");
    if (key.empty()) line.fail("expected key=value");
    line.expect("=");
    if (key == "ranks") {
      s.spec.ranks = static_cast<int>(line.integer("a rank count"));
      if (s.spec.ranks < 1 || s.spec.ranks > (1 << 20)) line.fail("ranks must be positive");
    } else if (key == "count") {
      s.spec.count = line.integer("an element count");
      if (s.spec.count < 0) line.fail("count must not be negative");
    } else if (key == "root") {
      s.spec.root = static_cast<int>(line.integer("a root rank"));
    } else if (key == "chunks") {
      s.options.chunks = static_cast<int>(line.integer("a chunk count"));
    } else if (key == "channels") {
      s.options.channels = static_cast<int>(line.integer("a channel count"));
      if (s.options.channels < 1) line.fail("channels must be positive");
    } else if (key == "ranks-per-node") {
      s.options.ranks_per_node = static_cast<int>(line.integer("a rank count"));
    } else if (key == "op") {
      std::string_view v = line.word();
      auto op = parse_reduce_op(v);
      if (!op) line.fail(fmt::format("unknown reduction '{}' (sum, max, min, prod)", v));
      s.spec.op = *op;
    } else if (key == "algorithm") {
      std::string_view v = line.word();
      if (v.empty()) line.fail("expected an algorithm name");
      s.algorithm = std::string(v);
    } else {
      line.fail(fmt::format("unknown key '{}'", key));
    }
  }
  if (s.spec.root < 0 || s.spec.root >= s.spec.ranks)
    line.fail(fmt::format("root {} is not one of the {} ranks", s.spec.root, s.spec.ranks), 0);
}

Step parse_step(Line& line, int expected_id) {
  Step step;
  const std::int64_t id = line.integer("a step number");
  if (id != expected_id)
    line.fail(fmt::format("step number {} out of sequence: expected {}", id, expected_id));
  step.id = expected_id;
  line.expect(":");
  std::string_view kind = line.word();
  if (kind == "send") {
    step.kind = StepKind::Send;
    line.expect("to");
    step.peer = static_cast<int>(line.integer("a peer rank"));
    step.src = line.region();
  } else if (kind == "recv" || kind == "recv-reduce") {
    step.kind = kind == "recv" ? StepKind::Recv : StepKind::RecvReduce;
    line.expect("from");
    step.peer = static_cast<int>(line.integer("a peer rank"));
    step.dst = line.region();
  } else if (kind == "copy" || kind == "reduce") {
    step.kind = kind == "copy" ? StepKind::Copy : StepKind::LocalReduce;
    step.src = line.region();
    line.expect("->");
    step.dst = line.region();
  } else {
    line.fail(fmt::format("unknown step '{}' (send, recv, recv-reduce, copy, reduce)", kind));
  }
  if (line.accept("after")) {
    while (!line.at_end()) {
      const std::int64_t dep = line.integer("a step number");
      if (dep < 0 || dep >= expected_id)
        line.fail(expected_id == 0
                      ? std::string("step 0 is the first step and cannot depend on another")
                      : fmt::format("step {} can only depend on earlier steps (0..{})", expected_id,
                                    expected_id - 1));
      step.deps.push_back(static_cast<int>(dep));
    }
  }
  if (!line.at_end()) line.fail(fmt::format("unexpected '{}'", line.word()));
  return step;
}

}  // namespace

Schedule parse_schedule(std::string_view text, std::string_view filename) {
  Schedule s;
  bool have_header = false;
  int line_number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_number;
    std::string_view content = raw.substr(0, raw.find('#'));
    Line cursor(filename, line_number, content, raw);
    if (cursor.at_end()) continue;
    std::string_view first = cursor.word();
    if (first == "schedule") {
      if (have_header) cursor.fail("a second schedule header");
      parse_header(cursor, s);
      have_header = true;
      s.ranks.reserve(s.spec.ranks);
    } else if (!have_header) {
      cursor.fail("expected 'schedule <collective> key=value ...' first");
    } else if (first == "rank") {
      const std::int64_t r = cursor.integer("a rank");
      if (r != static_cast<std::int64_t>(s.ranks.size()))
        cursor.fail(fmt::format("expected rank {} next", s.ranks.size()));
      if (r >= s.spec.ranks)
        cursor.fail(fmt::format("rank {} is beyond ranks={}", r, s.spec.ranks));
      RankProgram program;
      if (cursor.accept("scratch")) {
        cursor.expect("=");
        program.scratch_count = cursor.integer("a scratch size");
        if (program.scratch_count < 0) cursor.fail("scratch size must not be negative");
      }
      if (!cursor.at_end()) cursor.fail(fmt::format("unexpected '{}'", cursor.word()));
      s.ranks.push_back(std::move(program));
    } else {
      if (s.ranks.empty()) cursor.fail("a step before any 'rank N' line");
      Line step_line(filename, line_number, content, raw);
      RankProgram& program = s.ranks.back();
      program.steps.push_back(parse_step(step_line, static_cast<int>(program.steps.size())));
    }
  }
  if (!have_header)
    throw ScheduleParseError(fmt::format("{}: error: no 'schedule' header", filename));
  if (static_cast<int>(s.ranks.size()) != s.spec.ranks)
    throw ScheduleParseError(fmt::format("{}: error: ranks={} but {} rank section(s) given",
                                         filename, s.spec.ranks, s.ranks.size()));
  return s;
}

}  // namespace spora::parallel
