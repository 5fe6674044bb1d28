// `spora-coll`: the `spora coll` sub-command as a program of its own, linked only against the
// collectives and comm libraries, so it builds without the front end and runs under mpirun:
//   mpirun --oversubscribe --allow-run-as-root -np 4 build/bin/spora-coll --backend mpi ...
#include "tools/cmd_coll.h"

int main(int argc, char** argv) { return spora::tools::run_coll_command(argc, argv); }
