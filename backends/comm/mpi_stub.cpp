// Built instead of mpi.cpp when CMake finds no MPI: the functions exist and say so.
#include "backends/comm/mpi_comm.h"

namespace spora::comm {

namespace {
[[noreturn]] void unavailable() { throw CommError("mpi: Spora was built without MPI"); }
}  // namespace

bool mpi_available() { return false; }
bool mpi_initialized() { return false; }
void mpi_initialize(int*, char***) { unavailable(); }
void mpi_finalize() {}
int mpi_world_rank() { return 0; }
int mpi_world_size() { return 1; }
std::unique_ptr<Communicator> make_mpi_communicator() { unavailable(); }
std::unique_ptr<Communicator> make_mpi_communicator(int) { unavailable(); }

}  // namespace spora::comm
