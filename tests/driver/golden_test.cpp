// Golden, negative and conformance tests: each runs the built `spora` program on a small
// file and checks what it prints.
//
//  tests/golden/*.sp      `# RUN: <spora arguments>` (default `run`; the file path is appended),
//                         `# CHECK: text` lines that must appear in order in stdout (each on a
//                         later line than the previous match, as whole tokens: `6.0` does not
//                         match `16.0`), `# CHECK-NEXT: text` on the very next line, `# EXIT: n`
//                         the expected exit status (default 0), `# CHECK-ERR: text` lines
//                         expected in stderr. Each one without a RUN line also runs in eager
//                         mode and must print what graph mode prints (numbers within 1e-5).
//                         Every golden program's typed IR must also print, parse and print
//                         back identically (the IR round trip).
//  tests/std/*.sp         the standard library's tests: golden programs (as above) whose CHECK
//                         lines must hold in graph mode and in eager mode.
//  tests/negative/*.sp    `# expected-error@+N: message` (or `@-N`, or `# expected-error:` on
//                         the offending line itself): `spora check` must exit 1 and report
//                         exactly these errors (line equal, message contains the text).
//  tests/conformance/*.sp the language contract programs with expected.json (numbers printed
//                         in order, relative tolerance 1e-4), in graph and eager mode.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/driver/run_spora.h"

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t k = 0;
  while (k < s.size() && s[k] == ' ') ++k;
  return s.substr(k);
}

std::vector<fs::path> files_in(const std::string& dir) {
  std::vector<fs::path> out;
  const fs::path d = fs::path(SPORA_SOURCE_DIR) / dir;
  if (!fs::exists(d)) return out;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().extension() == ".sp") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string name_of(const testing::TestParamInfo<fs::path>& info) {
  std::string s = info.param.stem().string();
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// Whether `text` occurs in `line` as whole tokens: a match that starts with a letter, digit or
// '_' must not continue a word or number before it (nor follow a sign, when it starts with a
// digit), and one that ends with such a character must not run on into one after it (nor into
// a decimal part), so "6.0" does not match "16.0", "-6.0" or "6.05", and "6" not "6.5".
bool contains_token(const std::string& line, const std::string& text) {
  if (text.empty()) return true;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  for (size_t p = line.find(text); p != std::string::npos; p = line.find(text, p + 1)) {
    const size_t end = p + text.size();
    if (word(text.front()) && p > 0) {
      const char before = line[p - 1];
      if (word(before) || (before == '.' && digit(text.front())) ||
          (digit(text.front()) && (before == '-' || before == '+')))
        continue;
    }
    if (word(text.back()) && end < line.size()) {
      const char after = line[end];
      if (word(after) || (after == '.' && end + 1 < line.size() && digit(line[end + 1]))) continue;
    }
    return true;
  }
  return false;
}

// Checks CHECK / CHECK-NEXT lines against output lines, in order (each as whole tokens).
void check_lines(const std::vector<std::pair<std::string, bool>>& checks, const std::string& output,
                 const std::string& what) {
  auto lines = lines_of(output);
  size_t pos = 0;
  bool first = true;
  for (const auto& [text, next] : checks) {
    bool found = false;
    if (next && !first) {
      if (pos < lines.size() && contains_token(lines[pos], text)) {
        found = true;
        ++pos;
      }
    } else {
      for (; pos < lines.size(); ++pos) {
        if (contains_token(lines[pos], text)) {
          found = true;
          ++pos;
          break;
        }
      }
    }
    first = false;
    ASSERT_TRUE(found) << what << ": no line matching '" << text << "'"
                       << (next ? " right after the previous match" : "") << "\n--- " << what
                       << " ---\n"
                       << output;
  }
}

// Runs one golden program (`default_run` unless it has a `# RUN:` line) and checks its output.
void check_golden(const fs::path& file, const std::string& default_run) {
  std::string run = default_run;
  int want_exit = 0;
  std::vector<std::pair<std::string, bool>> checks, err_checks;
  for (const auto& l : lines_of(read_file(file))) {
    const std::string t = trim(l);
    if (t.rfind("# RUN:", 0) == 0)
      run = trim(t.substr(6));
    else if (t.rfind("# CHECK-NEXT:", 0) == 0)
      checks.emplace_back(trim(t.substr(13)), true);
    else if (t.rfind("# CHECK-ERR:", 0) == 0)
      err_checks.emplace_back(trim(t.substr(12)), false);
    else if (t.rfind("# CHECK:", 0) == 0)
      checks.emplace_back(trim(t.substr(8)), false);
    else if (t.rfind("# EXIT:", 0) == 0)
      want_exit = std::stoi(t.substr(7));
  }
  ASSERT_FALSE(checks.empty() && err_checks.empty()) << file << " has no CHECK lines";
  RunResult r = run_spora(run + " " + file.string());
  EXPECT_EQ(r.status, want_exit) << "stderr:\n" << r.err << "\nstdout:\n" << r.out;
  check_lines(checks, r.out, "stdout");
  check_lines(err_checks, r.err, "stderr");
}

bool has_run_line(const fs::path& file) {
  for (const auto& l : lines_of(read_file(file)))
    if (trim(l).rfind("# RUN:", 0) == 0) return true;
  return false;
}

TEST(GoldenChecks, MatchWholeTokens) {
  EXPECT_TRUE(contains_token("[6.0, 2.0]", "6.0"));
  EXPECT_TRUE(contains_token("loss 6.0", "loss 6.0"));
  EXPECT_TRUE(contains_token("16.0 6.0", "6.0"));  // the second occurrence
  EXPECT_FALSE(contains_token("16.0", "6.0"));
  EXPECT_FALSE(contains_token("-6.0", "6.0"));
  EXPECT_FALSE(contains_token("6.05", "6.0"));
  EXPECT_FALSE(contains_token("6.5", "6"));
  EXPECT_FALSE(contains_token("total_loss 1", "loss 1"));
  EXPECT_TRUE(contains_token("x: -6.0.", "-6.0"));
  EXPECT_TRUE(contains_token("error: 'f' is not defined", "is not"));
  EXPECT_TRUE(contains_token("a.sp:3:5: error: x", "a.sp:3:5: error"));
}

class Golden : public testing::TestWithParam<fs::path> {};

TEST_P(Golden, Output) { check_golden(GetParam(), "run"); }

TEST_P(Golden, IrRoundTrip) {
  const fs::path file = GetParam();
  RunResult typed = run_spora("ir --stage typed " + file.string());
  if (typed.status != 0) GTEST_SKIP() << "does not compile (a golden error test)";
  const fs::path tmp = fs::temp_directory_path() / ("spora_rt_" + std::to_string(::getpid()) + "_" +
                                                    file.stem().string() + ".ir");
  {
    std::ofstream f(tmp);
    f << typed.out;
  }
  RunResult again = run_spora("ir --stage typed " + tmp.string());
  fs::remove(tmp);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, typed.out);
}

// Eager/graph parity: a golden program (without a `# RUN:` line) prints the same in eager mode
// as in graph mode, with the same exit status: every line's text equal, its numbers within
// 1e-5 relative (1e-6 absolute near zero; the kernels of graph mode's fused groups round
// differently, e.g. by fused multiply-adds), nan equal to nan.
std::vector<std::string> split_numbers(const std::string& line, std::vector<double>& numbers) {
  static const std::regex number(R"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?\binf\b|\bnan\b)");
  std::vector<std::string> text;
  size_t at = 0;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), number);
       it != std::sregex_iterator(); ++it) {
    text.push_back(line.substr(at, static_cast<size_t>(it->position()) - at));
    numbers.push_back(std::strtod(it->str().c_str(), nullptr));
    at = static_cast<size_t>(it->position() + it->length());
  }
  text.push_back(line.substr(at));
  return text;
}

std::string parity_difference(const std::string& graph, const std::string& eager) {
  const auto g = lines_of(graph), e = lines_of(eager);
  if (g.size() != e.size())
    return "graph mode printed " + std::to_string(g.size()) + " lines, eager mode " +
           std::to_string(e.size());
  for (size_t i = 0; i < g.size(); ++i) {
    std::vector<double> gn, en;
    const auto gt = split_numbers(g[i], gn), et = split_numbers(e[i], en);
    bool same = gt == et && gn.size() == en.size();
    for (size_t k = 0; same && k < gn.size(); ++k)
      same = (std::isnan(gn[k]) && std::isnan(en[k])) || gn[k] == en[k] ||
             std::fabs(gn[k] - en[k]) <= 1e-5 * std::fabs(gn[k]) + 1e-6;
    if (!same)
      return "line " + std::to_string(i + 1) + ": graph '" + g[i] + "', eager '" + e[i] + "'";
  }
  return "";
}

TEST(GoldenChecks, ParityComparesNumbersWithinTolerance) {
  EXPECT_EQ(parity_difference("[0.661888, -0.114368]\n", "[0.661888, -0.11436799]\n"), "");
  EXPECT_EQ(parity_difference("loss nan 1e-07\n", "loss nan 1.0000001e-07\n"), "");
  EXPECT_NE(parity_difference("[0.66, -0.11]\n", "[0.66, -0.12]\n"), "");
  EXPECT_NE(parity_difference("a 1.0\n", "b 1.0\n"), "");
  EXPECT_NE(parity_difference("1.0\n", "1.0\n2.0\n"), "");
  EXPECT_NE(parity_difference("[1.0, 2.0]\n", "[1.0, 2.0, 3.0]\n"), "");
}

TEST_P(Golden, EagerParity) {
  const fs::path file = GetParam();
  if (has_run_line(file)) GTEST_SKIP() << "runs once, as its RUN line says";
  const RunResult graph = run_spora("run " + file.string());
  const RunResult eager = run_spora("run --mode eager " + file.string());
  EXPECT_EQ(eager.status, graph.status) << "graph stderr:\n"
                                        << graph.err << "\neager stderr:\n"
                                        << eager.err;
  EXPECT_EQ(parity_difference(graph.out, eager.out), "") << "--- graph ---\n"
                                                         << graph.out << "--- eager ---\n"
                                                         << eager.out;
}

INSTANTIATE_TEST_SUITE_P(Programs, Golden, testing::ValuesIn(files_in("tests/golden")), name_of);

// tests/std/*.sp: the standard library's tests (lang/std/), golden programs whose CHECK lines
// must hold in graph and in eager mode. A file with a `# RUN:` line (spora grad-check) runs
// once, as written.
class Std : public testing::TestWithParam<fs::path> {};

TEST_P(Std, GraphMode) { check_golden(GetParam(), "run --mode graph"); }
TEST_P(Std, EagerMode) {
  if (has_run_line(GetParam())) GTEST_SKIP() << "runs once, as its RUN line says";
  check_golden(GetParam(), "run --mode eager");
}

INSTANTIATE_TEST_SUITE_P(Programs, Std, testing::ValuesIn(files_in("tests/std")), name_of);

class Negative : public testing::TestWithParam<fs::path> {};

TEST_P(Negative, Diagnostics) {
  const fs::path file = GetParam();
  struct Expect {
    int line;
    std::string text;
    bool seen = false;
  };
  std::vector<Expect> expects;
  static const std::regex re(R"(#\s*expected-error(@([+-]\d+))?:\s*(.*)$)");
  auto src = lines_of(read_file(file));
  for (size_t i = 0; i < src.size(); ++i) {
    std::smatch m;
    if (std::regex_search(src[i], m, re)) {
      int line = static_cast<int>(i) + 1 + (m[2].matched ? std::stoi(m[2].str()) : 0);
      expects.push_back({line, trim(m[3].str())});
    }
  }
  ASSERT_FALSE(expects.empty()) << file << " has no expected-error lines";
  RunResult r = run_spora("check " + file.string());
  EXPECT_EQ(r.status, 1) << r.err;
  static const std::regex diag(R"(^(.*):(\d+):(\d+): error: (.*)$)");
  static const std::regex total(R"(^(\d+) errors? generated$)");
  int printed = 0, counted = -1;
  std::set<std::string> seen_lines;
  for (const auto& l : lines_of(r.err)) {
    std::smatch m;
    if (std::regex_match(l, m, total)) counted = std::stoi(m[1].str());
    if (!std::regex_match(l, m, diag)) continue;
    ++printed;
    EXPECT_TRUE(seen_lines.insert(l).second) << "error printed twice: " << l;
    const int line = std::stoi(m[2].str());
    bool matched = false;
    for (auto& e : expects) {
      if (e.line == line && m[4].str().find(e.text) != std::string::npos) {
        e.seen = matched = true;
      }
    }
    EXPECT_TRUE(matched) << "unexpected error: " << l;
  }
  for (const auto& e : expects)
    EXPECT_TRUE(e.seen) << "missing error on line " << e.line << ": " << e.text
                        << "\n--- stderr ---\n"
                        << r.err;
  // The count it ends with is the errors it printed.
  EXPECT_EQ(counted, printed) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Programs, Negative, testing::ValuesIn(files_in("tests/negative")),
                         name_of);

// ---------------------------------------------------------------- conformance
std::vector<double> numbers_in(const std::string& text) {
  static const std::regex num(
      R"((^|[^A-Za-z_\d])([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b))");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), num); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[2].str()));
  return out;
}

// Every conformance program, in both execution modes.
std::vector<std::string> conformance_programs() {
  std::vector<std::string> out;
  for (const auto& p : files_in("tests/conformance")) out.push_back(p.stem().string());
  return out;
}

class Conformance : public testing::TestWithParam<std::string> {
 protected:
  void check(const std::string& mode);
};

TEST_P(Conformance, GraphMode) { check("graph"); }
TEST_P(Conformance, EagerMode) { check("eager"); }

void Conformance::check(const std::string& mode) {
  const auto expected = nlohmann::json::parse(
      read_file(fs::path(SPORA_SOURCE_DIR) / "tests/conformance/expected.json"));
  const std::string name = GetParam();
  RunResult r =
      run_spora("run --mode " + mode + " " +
                (fs::path(SPORA_SOURCE_DIR) / "tests/conformance" / (name + ".sp")).string());
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = numbers_in(r.out);
  auto want = expected.at(name).get<std::vector<double>>();
  ASSERT_EQ(got.size(), want.size()) << r.out;
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_LE(std::abs(got[k] - want[k]), std::max(1e-4 * std::abs(want[k]), 1e-5))
        << "number " << k << "\n"
        << r.out;
}

// A program with an error prints the same in both modes: graph mode runs nothing, and eager
// mode, which runs each statement as it is lowered, stops at the statement that reports the
// error (here inside a @jit function, lowered as a graph), so nothing after it prints.
TEST(EagerParity, StopsAtTheFirstError) {
  const fs::path file = fs::temp_directory_path() /
                        ("spora_stop_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()) + ".sp");
  std::ofstream(file) << R"(@jit
def f(x) = x + zeros(shape=(3,))
def main() {
    let x = [1.0, 2.0]
    print(f(x))
    print("after")
}
)";
  for (const std::string mode : {"graph", "eager"}) {
    RunResult r = run_spora("run --mode " + mode + " " + file.string());
    EXPECT_EQ(r.status, 1) << mode << "\n" << r.err;
    EXPECT_EQ(r.out, "") << mode;
    EXPECT_NE(r.err.find(":2:12: error: cannot broadcast f32[2] and f32[3]"), std::string::npos) << mode << "\n" << r.err;
  }
  fs::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Programs, Conformance, testing::ValuesIn(conformance_programs()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
