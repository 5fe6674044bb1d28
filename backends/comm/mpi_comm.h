// The MPI communicator (OpenMPI): one process per rank.
//
//   spora::comm::mpi_initialize(&argc, &argv);       // once per process
//   auto comm = spora::comm::make_mpi_communicator(); // a dup of MPI_COMM_WORLD
//   ...
//   spora::comm::mpi_finalize();
//
// Point-to-point maps to MPI_Isend / MPI_Irecv of bytes on a private duplicate of the world
// communicator (so schedule messages never meet anyone else's), wait_some to MPI_Waitsome.
// Receive-reduce is staged by the executor and reduced with host_reduce, which is what MPI
// libraries do internally too. native() calls MPI_Bcast, MPI_Scatter, MPI_Gather, MPI_Reduce,
// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block and MPI_Alltoall.
//
// Collective timeout: with SPORA_COLLECTIVE_TIMEOUT=S (seconds, e.g. 30; `spora run
// --collective-timeout S` sets it), every wait of a communicator (wait_some, native, barrier,
// and the barrier before MPI_Finalize) polls MPI's non-blocking calls instead of blocking. A
// rank that waits S seconds tells every other rank on a private duplicate of MPI_COMM_WORLD;
// the ranks still responding answer within 2 s, the lowest of them prints one line naming the
// ranks nobody heard from,
//   spora: rank 1 did not arrive at a collective within 5 s (SPORA_COLLECTIVE_TIMEOUT; rank 0
//   waited in MPI_Allreduce); stopping the run
// and they exit with status 1, after which mpirun stops the silent ranks. Unset or 0: MPI's
// blocking calls, no timeout (a stopped rank holds the others forever). Waits in MPI_Init and
// in the making of communicators are not covered.
//
// This header does not include <mpi.h>; when Spora is built without MPI, mpi_available()
// is false and the other functions throw CommError.
#pragma once

#include <memory>

#include "backends/comm/communicator.h"

namespace spora::comm {

// SPORA_COLLECTIVE_TIMEOUT in seconds (0 when unset); CommError when it is not a number >= 0.
double collective_timeout_seconds();

bool mpi_available();
void mpi_initialize(int* argc, char*** argv);  // no-op when already initialized
void mpi_finalize();                           // no-op when not initialized or finalized
bool mpi_initialized();
int mpi_world_rank();
int mpi_world_size();

// A communicator over all processes.
std::unique_ptr<Communicator> make_mpi_communicator();
// A communicator over world ranks 0..ranks-1 (collective over the world: every process
// calls it); processes outside get nullptr. For tests at several sizes within one mpirun.
std::unique_ptr<Communicator> make_mpi_communicator(int ranks);

// This process's part of an MPI run: MPI up for the object's lifetime, and the world
// communicator (released before MPI is finalized).
struct MpiWorld {
  MpiWorld() {
    mpi_initialize(nullptr, nullptr);
    world = make_mpi_communicator();
  }
  ~MpiWorld() {
    world.reset();
    mpi_finalize();
  }
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  std::unique_ptr<Communicator> world;
};

}  // namespace spora::comm
