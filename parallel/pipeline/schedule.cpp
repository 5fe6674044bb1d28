// Pipeline schedules (schedule.h).
#include "parallel/pipeline/schedule.h"

#include <algorithm>

namespace spora::parallel::pipeline {

std::string schedule_name(Schedule s) { return s == Schedule::GPipe ? "gpipe" : "1f1b"; }

std::vector<Action> stage_schedule(Schedule s, int stages, int stage, int micro) {
  std::vector<Action> out;
  const auto forward = [&](int m) { out.push_back({Action::Kind::Forward, m}); };
  const auto backward = [&](int m) { out.push_back({Action::Kind::Backward, m}); };
  if (s == Schedule::GPipe) {
    for (int m = 0; m < micro; ++m) forward(m);
    for (int m = 0; m < micro; ++m) backward(m);
    return out;
  }
  const int warmup = std::min(stages - stage - 1, micro);
  for (int m = 0; m < warmup; ++m) forward(m);
  for (int i = 0; i < micro - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int m = micro - warmup; m < micro; ++m) backward(m);
  return out;
}

std::string schedule_string(const std::vector<Action>& actions) {
  std::string s;
  for (const Action& a : actions) {
    if (!s.empty()) s += ' ';
    s += (a.kind == Action::Kind::Forward ? "F" : "B") + std::to_string(a.micro);
  }
  return s;
}

int peak_live(const std::vector<Action>& actions) {
  int live = 0, peak = 0;
  for (const Action& a : actions) {
    live += a.kind == Action::Kind::Forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace spora::parallel::pipeline
