// What a person training a model sees: a progress bar per epoch, batch metrics, a line per
// epoch, and the curves at the end.
//
//   for (x, y) in fashion_mnist("train", batch=64, shuffle=true, progress=true) {
//       let (l, g) = value_and_grad(loss)(net, x, y)
//       report("loss", l)                           # a batch metric: the bar shows its mean
//       ...
//   }
//   log_epoch(epoch + 1, test_loss=tl, test_acc=acc)   # one line; history for the curves
//   save_curves("fashion_mlp")                          # fashion_mlp.csv and fashion_mlp.svg
//
// The bar (stderr) of a dataset made with progress=true shows batches done/total, the running
// mean of each reported metric since the epoch began, samples per second and the time left.
// On a terminal it is redrawn in place (\r, at most ten times a second); otherwise (CI logs) it
// prints a plain line at 25, 50, 75 and 100 %. SPORA_PROGRESS=0 turns bars off.
//
// log_epoch(epoch, name=value, ...) prints `epoch 3  train_loss 0.3121  test_loss 0.3510
// test_acc 0.8744` on stdout and records the row. Every metric reported since the previous
// log_epoch and not given by name (as `x` or `train_x`) is added as `train_<x>`, the mean of
// its batch values. save_curves(prefix) writes the history as CSV (a column per metric) and as
// an SVG plot (a loss panel with the per-batch values as a thin line, an accuracy panel, and a
// panel for other metrics), both atomically.
//
// The Recorder is process-wide (one training run per process); tests reset() it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace spora::runtime::data {

class Recorder {
 public:
  static Recorder& instance();
  void reset();

  void report(const std::string& name, double value);
  // The line for one epoch (without newline); records the row.
  std::string log_epoch(double epoch, const std::vector<std::string>& names, const std::vector<double>& values);
  // Means of the metrics reported since mark_window(), "loss 0.4123  acc 0.8812".
  std::string window_summary() const;
  void mark_window();

  struct Row {
    double epoch = 0;
    std::vector<std::pair<std::string, double>> values;
  };
  struct Batches {  // the batch values of one metric between two log_epoch calls
    std::string name;
    size_t epoch_row = 0;  // the history row they belong to
    std::vector<double> values;
  };
  const std::vector<Row>& history() const { return history_; }
  std::vector<std::string> columns() const;  // metric names in first-appearance order
  std::string csv() const;
  std::string svg() const;
  void save_curves(const std::string& prefix) const;

 private:
  struct Acc {
    std::string name;
    double epoch_sum = 0;
    int64_t epoch_n = 0;
    double window_sum = 0;
    int64_t window_n = 0;
    std::vector<double> epoch_values;
  };
  mutable std::mutex mu_;
  std::vector<Acc> accs_;
  std::vector<Row> history_;
  std::vector<Batches> batches_;
};

// Where bars go and whether it is a terminal (tests capture them).
void set_progress_output(std::ostream* os, bool terminal);
// Number formatting of epoch lines: 4 decimals, scientific for very small or large values.
std::string format_metric(double v);

// The median time between consecutive time points (the upper median of an even count; 0 for
// fewer than two points). The progress bar's final line gives it per batch as "X ms/step".
double median_step_seconds(const std::vector<std::chrono::steady_clock::time_point>& ticks);

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total_batches, int64_t total_samples);
  ~ProgressBar();
  // One more batch of `samples` rows is done.
  void tick(int64_t samples);
  // The epoch is over (draws the final state once).
  void finish();
  static bool enabled();  // SPORA_PROGRESS is not 0/off

 private:
  void draw(bool final);
  std::string label_;
  int64_t total_, total_samples_, done_ = 0, samples_ = 0;
  int next_quarter_ = 1;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  // When each batch was done: the final line gives the median time between batches, which
  // leaves out the first batch's one-time costs (decoding the data, compiling).
  std::vector<std::chrono::steady_clock::time_point> ticks_;
};

}  // namespace spora::runtime::data
