// The text form of a schedule: printed by `spora coll --print-schedule`, parsed back by
// parse_schedule, so a researcher can write an algorithm by hand and run, check or simulate it.
//
//   # ring all-reduce, 2 ranks, 5 elements      <- '#' starts a comment, blank lines ignored
//   schedule all-reduce ranks=2 count=5 op=sum root=0 algorithm=ring chunks=1 ranks-per-node=0
//   rank 0 scratch=0
//     0: copy input[0:3] -> output[0:3]
//     1: send to 1 input[3:5]
//     2: recv-reduce from 1 output[0:3] after 0
//     3: send to 1 output[0:3] after 2
//     4: recv from 1 output[3:5]
//   rank 1 scratch=0
//     ...
//
// - Header keys may come in any order; all but the collective have defaults (ranks=1,
//   count=0, op=sum, root=0, algorithm=custom, chunks=1, ranks-per-node=0, channels=1; the
//   printer writes channels only when it is not 1).
// - A region is buffer[begin:end], elements begin..end-1 of input, output or scratch.
// - Steps: `send to P R`, `recv from P R`, `recv-reduce from P R`, `copy R -> R`,
//   `reduce R -> R` (dst = dst op src), each optionally followed by `after ID ID ...`.
// - Every rank 0..ranks-1 appears once, in order; its steps are numbered 0, 1, 2, ...
//
// print_schedule(parse_schedule(t)) == t for printed schedules, and
// parse_schedule(print_schedule(s)) == s for every schedule s.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "parallel/collectives/schedule.h"

namespace spora::parallel {

std::string print_schedule(const Schedule& schedule);
std::string format_step(const Step& step);        // "2: recv-reduce from 1 output[0:3] after 0"
std::string format_region(const Region& region);  // "output[0:3]"

// A user error in a schedule file: "file:line:col: error: message", the line, and a caret.
class ScheduleParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the text form; throws ScheduleParseError. The result is well-formed text, not
// necessarily a correct schedule: run check_schedule (checker.h) for that.
Schedule parse_schedule(std::string_view text, std::string_view filename = "<schedule>");

}  // namespace spora::parallel
