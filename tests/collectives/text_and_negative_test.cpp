// The text form (print, parse, round trip, parse errors) and hand-made wrong schedules: each
// file in tests/collectives/bad/ carries its expected diagnostic inline, either
//   # expected-error: <message>        (a checker error, anywhere in the file), or
//   # expected-error@+1: <message>     (a parse error on the next line).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "parallel/collectives/text.h"

namespace spora::parallel {
namespace {

TEST(ScheduleText, PrintsTheRingAllReduce) {
  const Schedule s =
      build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 2, 5, 0});
  EXPECT_EQ(print_schedule(s),
            "schedule all-reduce ranks=2 count=5 op=sum root=0 algorithm=ring chunks=1 "
            "ranks-per-node=0\n"
            "rank 0 scratch=0\n"
            "  0: copy input[0:3] -> output[0:3]\n"
            "  1: send to 1 input[3:5]\n"
            "  2: recv-reduce from 1 output[0:3] after 0\n"
            "  3: send to 1 output[0:3] after 2\n"
            "  4: recv from 1 output[3:5]\n"
            "rank 1 scratch=0\n"
            "  0: copy input[3:5] -> output[3:5]\n"
            "  1: recv-reduce from 0 output[3:5] after 0\n"
            "  2: send to 0 input[0:3]\n"
            "  3: recv from 0 output[0:3]\n"
            "  4: send to 0 output[3:5] after 1\n");
}

TEST(ScheduleText, RoundTripsEveryAlgorithm) {
  for (Algorithm a : all_algorithms()) {
    if (a == Algorithm::Native) continue;
    for (Collective c : supported_collectives(a))
      for (int p : {1, 3, 6}) {
        const Schedule s = build_schedule(a, {c, ReduceOp::Max, p, 7, p - 1}, {2, 0});
        const std::string text = print_schedule(s);
        const Schedule back = parse_schedule(text);
        EXPECT_EQ(back, s) << text;
        EXPECT_EQ(print_schedule(back), text);
      }
  }
}

TEST(ScheduleText, HandWrittenScheduleWithCommentsPassesTheChecker) {
  // A 2-rank all-reduce by direct exchange: each rank sends its input and adds the other's.
  const Schedule s = parse_schedule(R"(
    # exchange and add
    schedule all-reduce count=3 ranks=2 algorithm=exchange
    rank 0 scratch=0
      0: copy input[0:3] -> output[0:3]
      1: send to 1 input[0:3]          # from the input: no wait for the copy
      2: recv-reduce from 1 output[0:3] after 0
    rank 1
      0: copy input[0:3] -> output[0:3]
      1: send to 0 input[0:3]
      2: recv-reduce from 0 output[0:3] after 0
  )");
  EXPECT_EQ(s.algorithm, "exchange");
  EXPECT_EQ(s.spec.count, 3);
  const CheckResult result = check_schedule(s);
  EXPECT_TRUE(result.ok()) << result.error;
}

TEST(ScheduleText, ParseErrorsPointAtTheColumn) {
  try {
    parse_schedule(
        "schedule all-reduce ranks=1 count=2\nrank 0\n  0: copy input[0:2] => output[0:2]\n",
        "x.sched");
    FAIL() << "no error";
  } catch (const ScheduleParseError& e) {
    EXPECT_STREQ(e.what(),
                 "x.sched:3:22: error: expected '->'\n"
                 "  0: copy input[0:2] => output[0:2]\n"
                 "                     ^");
  }
  EXPECT_THROW(parse_schedule("schedule all-reduce ranks=2\nrank 0\n"), ScheduleParseError);
  EXPECT_THROW(parse_schedule("schedule all-sum ranks=2\n"), ScheduleParseError);
  EXPECT_THROW(parse_schedule("rank 0\n"), ScheduleParseError);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(NegativeSchedules, EachFileFailsWithItsExpectedError) {
  const std::filesystem::path dir =
      std::filesystem::path(SPORA_SOURCE_DIR) / "tests/collectives/bad";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".sched") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const std::string text = read_file(entry.path());
    std::string expected;
    int expected_line = 0;  // 0: a checker error
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      for (const std::string tag : {"# expected-error: ", "# expected-error@+1: "}) {
        const auto at = line.find(tag);
        if (at == std::string::npos) continue;
        expected = line.substr(at + tag.size());
        expected_line = tag.find("@+1") != std::string::npos ? number + 1 : 0;
      }
    }
    ASSERT_FALSE(expected.empty()) << "no '# expected-error' line";
    try {
      const Schedule s = parse_schedule(text, name);
      ASSERT_EQ(expected_line, 0) << "expected a parse error, but it parsed";
      const CheckResult result = check_schedule(s);
      ASSERT_FALSE(result.ok()) << "the checker accepted it";
      EXPECT_NE(result.error.find(expected), std::string::npos)
          << "expected: " << expected << "\nactual:   " << result.error;
    } catch (const ScheduleParseError& e) {
      ASSERT_NE(expected_line, 0) << "unexpected parse error: " << e.what();
      const std::string prefix = name + ":" + std::to_string(expected_line) + ":";
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_NE(message.find("error: " + expected), std::string::npos)
          << "expected: " << expected << "\nactual:   " << message;
    }
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace spora::parallel
