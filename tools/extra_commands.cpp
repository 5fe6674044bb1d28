// Wires the sub-commands that live in their own files into the CLI.
#include "tools/commands.h"

namespace spora::tools {

void register_extra_commands(CLI::App& app) { (void)app; }

int run_extra_commands(CLI::App& app) {
  (void)app;
  return 2;
}

}  // namespace spora::tools
