// A program that leaks one allocation of its own between MPI_Init and MPI_Finalize, for
// leak_probe_test.sh: under the suite's suppressions (lsan_openmpi.supp) LeakSanitizer must
// still report this leak and nothing of Open MPI's.
#include <mpi.h>

#include <cstdio>

namespace {
char* volatile g_sink = nullptr;

__attribute__((noinline)) void spora_leak_probe_allocation() {
  g_sink = new char[4242];
  g_sink[0] = 1;
  g_sink = nullptr;  // the only pointer to it is gone: a leak
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  spora_leak_probe_allocation();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::printf("rank %d leaked 4242 bytes\n", rank);
  MPI_Finalize();
  return 0;
}
