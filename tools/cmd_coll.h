// `spora coll`: run and time a collective, nccl-tests style.
//
//   spora coll --op all-reduce --algo ring --ranks 8 --sizes 8:64M
//   mpirun -np 4 spora coll --backend mpi --op all-gather --algo bruck --sizes 1K:16M --json
//   spora coll --schedule my_allreduce.sched --ranks 4        # a hand-written schedule
//   spora coll --op broadcast --algo tree --ranks 6 --sizes 64 --print-schedule
//
// For each size it prints size, element count, type, reduction, root, time per call (the
// slowest rank's average over --iters calls after --warmup calls), algorithm bandwidth
// (size / time) and bus bandwidth with nccl-tests' conventions (size / time times
// 2(n-1)/n for all-reduce; (n-1)/n for all-gather, reduce-scatter, all-to-all, gather and
// scatter; 1 for broadcast and reduce), and the number of wrong output elements, checked
// against the direct computation. `size` is bytes as nccl-tests counts them: the buffer for
// all-reduce, broadcast and reduce, the total (all ranks' blocks) for the others.
// --json prints the same as one JSON object for the benchmark suite. The exit status is 1
// when an element was wrong or an error occurred.
#pragma once

#include <CLI/CLI.hpp>

namespace spora::tools {

// argv[0] is the program name; a leading "coll" argument is skipped.
int run_coll_command(int argc, char** argv);

// Wiring into the `spora` program's CLI11 app, two lines:
//   CLI::App* coll = add_coll_subcommand(app);          // before parsing
//   if (coll->parsed()) return run_coll_subcommand(*coll);
// `coll` is a prefix command: its arguments (--help included) reach run_coll_command as is.
CLI::App* add_coll_subcommand(CLI::App& app);
int run_coll_subcommand(CLI::App& coll);

}  // namespace spora::tools

using spora::tools::run_coll_command;
