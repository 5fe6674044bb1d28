// The progress bar and the metric recorder (see progress.h); the curves are in curves.cpp.
#include "backends/runtime/data/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace spora::runtime::data {

namespace {

std::ostream* g_bar_out = nullptr;
int g_bar_tty = -1;  // -1: ask isatty(2)

std::ostream& bar_out() { return g_bar_out ? *g_bar_out : std::cerr; }
bool bar_tty() { return g_bar_tty >= 0 ? g_bar_tty == 1 : ::isatty(STDERR_FILENO) == 1; }

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

std::string rate_text(double per_second) {
  char buf[32];
  if (per_second >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM", per_second / 1e6);
  else if (per_second >= 1e4)
    std::snprintf(buf, sizeof buf, "%.1fk", per_second / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", per_second);
  return buf;
}

std::string step_text(double seconds) {
  char buf[32];
  if (seconds >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  return buf;
}

}  // namespace

double median_step_seconds(const std::vector<std::chrono::steady_clock::time_point>& ticks) {
  std::vector<double> steps;
  steps.reserve(ticks.size());
  for (size_t i = 1; i < ticks.size(); ++i)
    steps.push_back(std::chrono::duration<double>(ticks[i] - ticks[i - 1]).count());
  if (steps.empty()) return 0;
  const auto mid = steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2);
  std::nth_element(steps.begin(), mid, steps.end());
  return *mid;
}

std::string format_metric(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (a != 0 && (a < 1e-3 || a >= 1e5))
    std::snprintf(buf, sizeof buf, "%.4e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

void set_progress_output(std::ostream* os, bool terminal) {
  g_bar_out = os;
  g_bar_tty = os ? (terminal ? 1 : 0) : -1;
}

// ---- Recorder -------------------------------------------------------------------------------

Recorder& Recorder::instance() {
  static Recorder r;
  return r;
}

void Recorder::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  accs_.clear();
  history_.clear();
  batches_.clear();
}

void Recorder::report(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(accs_.begin(), accs_.end(), [&](const Acc& a) { return a.name == name; });
  if (it == accs_.end()) {
    accs_.push_back(Acc{name, 0, 0, 0, 0, {}});
    it = accs_.end() - 1;
  }
  it->epoch_sum += value;
  ++it->epoch_n;
  it->window_sum += value;
  ++it->window_n;
  it->epoch_values.push_back(value);
}

void Recorder::mark_window() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Acc& a : accs_) {
    a.window_sum = 0;
    a.window_n = 0;
  }
}

std::string Recorder::window_summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const Acc& a : accs_) {
    if (a.window_n == 0) continue;
    if (!out.empty()) out += "  ";
    out += a.name + " " + format_metric(a.window_sum / static_cast<double>(a.window_n));
  }
  return out;
}

std::string Recorder::log_epoch(double epoch, const std::vector<std::string>& names, const std::vector<double>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  Row row;
  row.epoch = epoch;
  auto given = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  for (Acc& a : accs_) {
    if (a.epoch_n == 0) continue;
    const std::string col = a.name.rfind("train_", 0) == 0 ? a.name : "train_" + a.name;
    if (!given(a.name) && !given(col)) row.values.emplace_back(col, a.epoch_sum / static_cast<double>(a.epoch_n));
    batches_.push_back(Batches{col, history_.size(), std::move(a.epoch_values)});
    a.epoch_values.clear();
    a.epoch_sum = 0;
    a.epoch_n = 0;
  }
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) row.values.emplace_back(names[i], values[i]);
  std::string line = "epoch ";
  if (epoch == std::floor(epoch) && std::fabs(epoch) < 1e15)
    line += std::to_string(static_cast<int64_t>(epoch));
  else
    line += format_metric(epoch);
  for (const auto& [n, v] : row.values) line += "  " + n + " " + format_metric(v);
  history_.push_back(std::move(row));
  return line;
}

std::vector<std::string> Recorder::columns() const {
  std::vector<std::string> cols;
  for (const Row& r : history_)
    for (const auto& [n, v] : r.values)
      if (std::find(cols.begin(), cols.end(), n) == cols.end()) cols.push_back(n);
  return cols;
}

// ---- ProgressBar ----------------------------------------------------------------------------

bool ProgressBar::enabled() {
  const char* env = std::getenv("SPORA_PROGRESS");
  if (!env) return true;
  const std::string v = env;
  return !(v == "0" || v == "off" || v == "false" || v == "no");
}

ProgressBar::ProgressBar(std::string label, int64_t total_batches, int64_t total_samples)
    : label_(std::move(label)), total_(total_batches), total_samples_(total_samples) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
  Recorder::instance().mark_window();
  if (bar_tty()) draw(false);
}

ProgressBar::~ProgressBar() {
  // An abandoned bar (the loop stopped early) ends its line on a terminal.
  if (!finished_ && bar_tty() && done_ > 0) bar_out() << "\n" << std::flush;
}

void ProgressBar::tick(int64_t samples) {
  ++done_;
  samples_ += samples;
  const auto now = std::chrono::steady_clock::now();
  ticks_.push_back(now);
  if (bar_tty()) {
    if (now - last_draw_ >= std::chrono::milliseconds(100)) draw(false);
    return;
  }
  // Plain lines at each quarter (one line when a tick crosses several).
  bool crossed = false;
  while (next_quarter_ <= 3 && done_ * 4 >= total_ * next_quarter_ && done_ < total_) {
    ++next_quarter_;
    crossed = true;
  }
  if (crossed) draw(false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void ProgressBar::draw(bool final) {
  last_draw_ = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  const bool tty = bar_tty();
  std::string line = label_ + " ";
  if (tty) {
    constexpr int kWidth = 24;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * done_ / total_) : kWidth;
    line += "[" + std::string(static_cast<size_t>(filled), '=') + (filled < kWidth ? ">" : "") +
            std::string(static_cast<size_t>(std::max(0, kWidth - filled - 1)), ' ') + "] ";
  }
  const int width = static_cast<int>(std::to_string(total_).size());
  char count[64];
  std::snprintf(count, sizeof count, "%*lld/%lld", width, static_cast<long long>(done_), static_cast<long long>(total_));
  line += count;
  const std::string metrics = Recorder::instance().window_summary();
  if (!metrics.empty()) line += "  " + metrics;
  if (elapsed > 0 && samples_ > 0) line += "  " + rate_text(static_cast<double>(samples_) / elapsed) + " samples/s";
  if (final) {
    line += "  " + duration_text(elapsed) + " total";
    if (ticks_.size() >= 3) line += "  " + step_text(median_step_seconds(ticks_)) + "/step";
  } else if (done_ > 0) {
    line += "  " + duration_text(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_)) + " left";
  }
  std::ostream& os = bar_out();
  if (tty)
    os << "\r" << line << "\x1b[K" << (final ? "\n" : "") << std::flush;
  else
    os << line << "\n" << std::flush;
  (void)total_samples_;
}

}  // namespace spora::runtime::data
