// Wires the sub-commands that live in their own files into the CLI.
#include "tools/cmd_coll.h"
#include "tools/cmd_sim.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {
CLI::App* g_coll = nullptr;
CLI::App* g_sim_coll = nullptr;
}

void register_extra_commands(CLI::App& app) {
  g_coll = add_coll_subcommand(app);
  g_sim_coll = add_sim_coll_subcommand(app);
}

int run_extra_commands(CLI::App& app) {
  (void)app;
  if (g_coll && g_coll->parsed()) return run_coll_subcommand(*g_coll);
  if (g_sim_coll && g_sim_coll->parsed()) return run_sim_coll_subcommand(*g_sim_coll);
  return 2;
}

}  // namespace spora::tools
