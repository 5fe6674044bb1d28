// Every simulation in its own process.
//
// SimGrid allows one engine per process and keeps global state behind it (the platform, the
// clock, static counters in its cluster-zone builders); a second engine in the same process
// inherits the first one's clock and platform. So the simulator forks: the child builds the
// engine and the platform, runs, and writes its results to a pipe; the parent reads them and
// stays free of SimGrid state. Inputs need no serialisation (the child has a copy of memory).
// The cost is a fork per simulation (about a millisecond), not per simulated event.
#pragma once

#include <functional>
#include <istream>
#include <stdexcept>
#include <string>

namespace spora::sim {

// A simulation that could not run or failed inside SimGrid.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A simulation stopped at its time limit.
class SimulationTimeout : public SimulationError {
 public:
  using SimulationError::SimulationError;
};

// Runs `body` in a forked child and returns the string it returned. An exception in the child
// comes back as a SimulationError with the same message; a child that dies (a signal, an abort
// inside SimGrid) gives a SimulationError saying so. With `timeout_seconds` > 0, a child still
// running after that long is killed and SimulationTimeout thrown. Flushes stdio before forking.
std::string run_isolated(const std::function<std::string()>& body, double timeout_seconds = 0);

// The next number of an answer: children write doubles as hex floats ("{:a}"), so they come
// back bit for bit (operator>> does not read hex floats; strtod does).
double read_number(std::istream& in);

}  // namespace spora::sim
