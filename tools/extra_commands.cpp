// Wires the sub-commands that live in their own files into the CLI.
#include "tools/cmd_coll.h"
#include "tools/cmd_lsp.h"
#include "tools/cmd_search.h"
#include "tools/cmd_sim.h"
#include "tools/cmd_sim_gpt.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {
CLI::App* g_coll = nullptr;
CLI::App* g_sim_coll = nullptr;
CLI::App* g_synth = nullptr;
CLI::App* g_sim = nullptr;
CLI::App* g_calibrate = nullptr;
CLI::App* g_run_dp = nullptr;
CLI::App* g_search = nullptr;
CLI::App* g_sim_gpt = nullptr;
CLI::App* g_lsp = nullptr;
CLI::App* g_repl = nullptr;
CLI::App* g_jupyter = nullptr;
}

void register_extra_commands(CLI::App& app) {
  g_coll = add_coll_subcommand(app);
  g_sim_coll = add_sim_coll_subcommand(app);
  g_synth = add_synth_subcommand(app);
  g_sim = add_sim_subcommand(app);
  g_calibrate = add_calibrate_subcommand(app);
  g_run_dp = add_run_dp_subcommand(app);
  g_search = add_search_subcommand(app);
  g_sim_gpt = add_sim_gpt_subcommand(app);
  g_lsp = add_lsp_subcommand(app);
  g_repl = add_repl_subcommand(app);
  g_jupyter = add_jupyter_subcommand(app);
}

int run_extra_commands(CLI::App& app) {
  (void)app;
  if (g_coll && g_coll->parsed()) return run_coll_subcommand(*g_coll);
  if (g_sim_coll && g_sim_coll->parsed()) return run_sim_coll_subcommand(*g_sim_coll);
  if (g_synth && g_synth->parsed()) return run_synth_subcommand();
  if (g_sim && g_sim->parsed()) return run_sim_subcommand();
  if (g_calibrate && g_calibrate->parsed()) return run_calibrate_subcommand();
  if (g_run_dp && g_run_dp->parsed()) return run_run_dp_subcommand();
  if (g_search && g_search->parsed()) return run_search_subcommand();
  if (g_sim_gpt && g_sim_gpt->parsed()) return run_sim_gpt_subcommand(*g_sim_gpt);
  if (g_lsp && g_lsp->parsed()) return run_lsp_subcommand();
  if (g_repl && g_repl->parsed()) return run_repl_subcommand();
  if (g_jupyter && g_jupyter->parsed()) return run_jupyter_subcommand();
  return 2;
}

}  // namespace spora::tools
