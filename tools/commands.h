// Sub-commands of the `spora` program, one function each.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace spora::tools {

struct RunOptions {
  std::string mode = "graph";
  bool stats = false;
  bool optimize = true;   // run the simplification passes before executing (graph mode)
  bool fuse = true;       // fuse operators and run the groups with generated kernels (graph mode)
  std::string device = "cpu";  // cpu | cuda (`--device`; a program's set_device(...) overrides it)
  std::string profile;         // graph mode: write a Chrome trace of the run here (tools/profile.h)
  std::string amp;                 // O0..O3 (`--amp`; overrides a program's set_amp(...)); "": none
  std::string amp_dtype = "bf16";  // bf16 | f16 (`--amp-dtype`)
  bool verbose = false;        // cuda: say which functions are captured as CUDA graphs
};

int cmd_run(const std::string& path, const RunOptions& opts);
int cmd_check(const std::string& path);
int cmd_ir(const std::string& path, const std::string& stage, bool dot, const std::string& out,
           const std::vector<std::string>& print_after, const std::string& emit = "",
           const std::string& entry = "");
int cmd_ops();
int cmd_grad_check(const std::string& path, double tolerance);

// Commands that live in their own files (coll, sim, ...): they add their sub-commands to
// the app, and run the one that was chosen (returns 2 if none of them was).
void register_extra_commands(CLI::App& app);
int run_extra_commands(CLI::App& app);

}  // namespace spora::tools
