// libFuzzer target over the collective schedule text (parallel/collectives/text.h): any input
// gives a schedule or a located ScheduleParseError, never a crash, a hang or a sanitizer
// report. A schedule that parses is printed and checked (checker.h), as `spora-coll check`
// does with a file.
#include "parallel/collectives/checker.h"
#include "parallel/collectives/text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::parallel;
  try {
    const Schedule s = parse_schedule(spora::fuzz::text(data, size), "fuzz.sched");
    (void)print_schedule(s);
    (void)check_schedule(s);
  } catch (const ScheduleParseError&) {
  } catch (const ScheduleError&) {
  }
  return 0;
}
