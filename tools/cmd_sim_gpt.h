// `spora sim-gpt`: a GPT training step as Megatron-LM runs it, simulated on a cluster spec
// (sim/transformer/gpt_sim.h).
//
//   spora sim-gpt --cluster benchmarks/sim/gpt/dgx-a100-64.yaml --gpus 32 --hidden 2304
//                 --layers 24 --heads 24 --batch 512 [--tp 1] [--pp 1] [--dp N]
//                 [--micro-batch auto|N] [--virtual-stages 1] [--recompute full]
//                 [--sequence-parallel] [--zero 0] [--precision bf16] [--json]
//
// Prints the step time, TFLOP/s per GPU (the paper's count, with and without recomputation),
// memory per GPU with its headroom, the breakdown and, with --micro-batch auto, every size
// tried. Exit status 1 on a user error (a tp that does not divide the heads, a pp that does not
// divide the layers, a configuration that does not fit: by how much), with one line on stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace spora::tools {

// argv[0] is the program name; a leading "sim-gpt" argument is skipped.
int run_sim_gpt_command(int argc, char** argv);

CLI::App* add_sim_gpt_subcommand(CLI::App& app);
int run_sim_gpt_subcommand(CLI::App& sim_gpt);

}  // namespace spora::tools
