// `spora calibrate`: argument parsing and dispatch only. The measurements and the machine
// model they make are benchmarks/calibrate/ (calibrate.h explains them).
//
//   spora calibrate [--out examples/clusters/this-machine.yaml] [--devices N] [--cores N]
//   [--no-mpi]
//   spora calibrate --measure compute|mpi|share      (internal: the children the parent runs)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "benchmarks/calibrate/calibrate.h"
#include "lang/diagnostics.h"

namespace spora::tools {

namespace {

calibrate::CalibrateOptions g_options;
std::string g_measure;

}  // namespace

CLI::App* add_calibrate_subcommand(CLI::App& app) {
  calibrate::CalibrateOptions& o = g_options;
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine (GEMM and conv tables, bandwidths, dispatch, MPI collectives) and "
      "write its cluster spec");
  cmd->add_option("--out,-o", o.out, "where to write the spec")->capture_default_str();
  cmd->add_option("--devices", o.devices,
                  "devices (MPI ranks) the spec offers (default: the cores)");
  cmd->add_option("--cores", o.cores, "compute processes measured at once (default: the cores)");
  cmd->add_flag("--no-mpi", o.no_mpi, "skip the MPI measurement");
  cmd->add_option("--measure", g_measure, "internal: run one measurement (compute, mpi, share)");
  return cmd;
}

int run_calibrate_subcommand() {
  try {
    if (g_measure == "compute") return calibrate::measure_compute();
    if (g_measure == "mpi") return calibrate::measure_mpi();
    if (g_measure == "share") return calibrate::measure_share();
    if (!g_measure.empty()) throw lang::UserError("unknown --measure '" + g_measure + "'");
    g_options.self = std::filesystem::read_symlink("/proc/self/exe").string();
    return calibrate::calibrate_machine(g_options);
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora calibrate: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
