// `spora sim-coll`: simulate a collective on a cluster spec, nccl-tests style.
//
//   spora sim-coll --cluster examples/clusters/dgx-a100.yaml --op all-reduce --sizes 8:1G
//   spora sim-coll --cluster examples/clusters/dgx-a100-cluster-32.yaml --algo hierarchical
//                  --sizes 1G --json
//   spora sim-coll --cluster this-machine.yaml --sizes 1K --log -     # per-step log to stdout
//
// The table is `spora coll`'s (tools/cmd_coll.h): size, count, type, redop, root, time,
// algbw, busbw with nccl-tests' bus-bandwidth factors, and a `#wrong` column that is always
// `-` (nothing is computed). Times are simulated (sim/collectives.h); ranks default to every
// device of the cluster, rank r on device r (node-major). --json prints one JSON object.
// The exit status is 1 on an error (a bad spec, an invalid schedule, ...).
#pragma once

#include <CLI/CLI.hpp>

namespace spora::tools {

// argv[0] is the program name; a leading "sim-coll" argument is skipped.
int run_sim_coll_command(int argc, char** argv);

// Wiring into the `spora` program's CLI11 app, like add_coll_subcommand (cmd_coll.h):
//   CLI::App* sim = add_sim_coll_subcommand(app);        // before parsing
//   if (sim->parsed()) return run_sim_coll_subcommand(*sim);
CLI::App* add_sim_coll_subcommand(CLI::App& app);
int run_sim_coll_subcommand(CLI::App& sim_coll);

// `spora synth` (tools/cmd_synth.cpp): search a collective schedule for a cluster with the
// simulator (sim/synth.h), prove it and write it in the text form.
CLI::App* add_synth_subcommand(CLI::App& app);
int run_synth_subcommand();

// `spora sim` (tools/cmd_sim_step.cpp): one data-parallel training step on a cluster spec.
//   spora sim model.sp --cluster examples/clusters/dgx-a100.yaml --strategy dp --batch 256
//             [--fn main] [--optimizer sgd] [--bucket-mb 25] [--algo auto] [--comm-model auto]
//             [--trace step.json] [--svg step.svg] [--log -] [--json]
// The program sets its batch with a module-level `let batch = N` (the simulator sets it to
// --batch / ranks) and its entry takes value_and_grad of the loss (parallel/step/step_graph.h).
// Prints the step time, throughput, per-device compute / communication / idle / exposed
// communication and peak memory (sim/report.h).
CLI::App* add_sim_subcommand(CLI::App& app);
int run_sim_subcommand();

// `spora calibrate` (tools/cmd_calibrate.cpp, the measuring in benchmarks/calibrate/): measures
// this machine with microbenchmarks of our CPU kernels and MPI and writes a cluster spec with
// measured tables (default examples/clusters/this-machine.yaml).
CLI::App* add_calibrate_subcommand(CLI::App& app);
int run_calibrate_subcommand();

// `spora run-dp` (tools/cmd_run_dp.cpp): the real data-parallel step over MPI, under
// `mpirun -np N`, timed; the program contract is `spora sim`'s.
CLI::App* add_run_dp_subcommand(CLI::App& app);
int run_run_dp_subcommand();

}  // namespace spora::tools
