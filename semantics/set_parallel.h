// `set_parallel(...)`: a program says how `spora run` runs its main() on several ranks, as the
// command line's --ranks / --strategy / --mesh / --zero / --recompute do (those flags, given,
// win over it). It is one of the first statements of main, beside set_mode, set_device and
// set_amp, and every argument is a literal:
//
//   set_parallel(ranks=4, strategy="dp")                 # data parallelism over 4 ranks
//   set_parallel(strategy="strategies/dp2tp2.json")      # a strategy file; ranks: its mesh
//   set_parallel(ranks=4, mesh="2x2")                    # the program's shard annotations
//   set_parallel(ranks=4, strategy="dp", zero=3, recompute="all")
//
// A relative strategy path is relative to the program's directory. The lowering checks the
// call (located errors) and otherwise ignores it: what it asks for is the driver's
// (tools/cmd_run_distributed.cpp), which reads it with read_set_parallel before compiling.
// Graph mode only: with set_mode("eager") it is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lang/ast.h"

namespace spora::sem {

struct ParallelDirective {
  int64_t ranks = 0;      // 0: the mesh's size
  std::string strategy;   // "dp", a strategy file, or empty
  std::string mesh;       // "2x2", "dp=2,tp=2", or empty
  int zero = -1;          // -1: the plan's
  std::string recompute;  // "all", "net.l1,net.l2", or empty
  lang::SourceRange range;
};

struct ParallelDirectiveError {
  std::string message;
  lang::SourceRange range;
};

// Whether `s` is a `set_parallel(...)` statement.
bool is_set_parallel(const lang::Stmt& s);

// The directive of the call statement `s` (is_set_parallel), or the first thing wrong with it.
std::optional<ParallelDirective> read_set_parallel(const lang::Stmt& s, ParallelDirectiveError* error);

// The directive among the first statements of `main` (nullopt: none, or a malformed one, which
// the lowering reports).
std::optional<ParallelDirective> find_set_parallel(const lang::FuncDef& main);

}  // namespace spora::sem
