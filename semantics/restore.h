// Sets a variable for the rest of a scope and gives it back the value it had when the scope
// ends, by return or by exception: `const Restore<ir::Graph*> in_branch(graph_, branch);`
// emits into `branch` until the end of the block. The one-argument form only restores.
#pragma once

#include <utility>

namespace spora::sem {

template <class T>
class Restore {
 public:
  explicit Restore(T& var) : var_(var), saved_(var) {}
  Restore(T& var, T value) : var_(var), saved_(var) { var_ = std::move(value); }
  ~Restore() { var_ = std::move(saved_); }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T& var_;
  T saved_;
};

}  // namespace spora::sem
