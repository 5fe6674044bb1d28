// Launching a run on N ranks through MPI (Open MPI): `spora run prog.sp --ranks N` runs itself
// under `mpirun -np N` with the same arguments; `mpirun -np N spora run prog.sp --strategy ...`
// (with a hostfile: several hosts) starts the ranks directly. There is no launcher of our own:
// placing processes on hosts is MPI's job.
//
//   if (!under_mpi()) return spawn_mpirun(ranks, args, options);   // the parent
//   MpiWorld mpi;                                                   // each rank
//   ... mpi.world->rank() ...
#pragma once

#include <string>
#include <vector>

#include "backends/comm/mpi_comm.h"

namespace spora::distributed {

// True inside a process mpirun started (Open MPI, PMI or PMIx environment).
bool under_mpi();
// The number of processes mpirun started (from its environment), or 0 when unknown.
int mpi_world_size();
// This rank's place among the ranks mpirun started on its host, and their number (Open MPI's
// environment); -1 when unknown (not under Open MPI's mpirun).
int mpi_local_rank();
int mpi_local_size();

struct LaunchOptions {
  bool tag_output = false;  // mpirun --tag-output: every line prefixed with its rank
  std::string hostfile;     // mpirun --hostfile (several hosts); empty: this host
  // Extra mpirun arguments (SPORA_MPIRUN_ARGS, split on spaces, is appended too).
  std::vector<std::string> mpirun_args;
};

// Runs this executable with `args` under mpirun with `ranks` processes (oversubscribed, one
// OpenMP and BLAS thread per rank) and returns its exit status. If a rank dies, mpirun ends the
// others and names the rank; the status is then non-zero.
int spawn_mpirun(int ranks, const std::vector<std::string>& args, const LaunchOptions& o = {});

// This process's part of an MPI run (backends/comm/mpi_comm.h).
using comm::MpiWorld;

}  // namespace spora::distributed
