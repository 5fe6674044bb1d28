// Wires the sub-commands that live in their own files into the CLI.
#include "tools/cmd_coll.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {
CLI::App* g_coll = nullptr;
}

void register_extra_commands(CLI::App& app) { g_coll = add_coll_subcommand(app); }

int run_extra_commands(CLI::App& app) {
  (void)app;
  if (g_coll && g_coll->parsed()) return run_coll_subcommand(*g_coll);
  return 2;
}

}  // namespace spora::tools
