# The collectives benchmark suite and the standalone `spora-coll` driver (issue 5). Included
# from tests/extra_collectives.cmake; they need spora_comm, which benchmarks/CMakeLists.txt
# does not link.
set(SPORA_COLL_BENCH_DIR ${CMAKE_SOURCE_DIR}/benchmarks/collectives)

add_executable(spora_coll_driver ${SPORA_COLL_BENCH_DIR}/spora_coll_main.cpp)
set_target_properties(spora_coll_driver PROPERTIES OUTPUT_NAME spora-coll)
target_link_libraries(spora_coll_driver PRIVATE spora_tool_coll spora_comm CLI11::CLI11 fmt::fmt)

add_executable(bench_collectives ${SPORA_COLL_BENCH_DIR}/bench_collectives.cpp)
target_link_libraries(bench_collectives PRIVATE spora_comm benchmark::benchmark)
target_compile_definitions(bench_collectives PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")

# A quick smoke run of the CLI in the test suite: small sizes, threads and MPI.
add_test(NAME coll_cli_threads
         COMMAND spora_coll_driver --op all-reduce --algo ring --ranks 5 --sizes 8:64K --iters 2 --warmup 1)
add_test(NAME coll_cli_threads_json
         COMMAND spora_coll_driver --op all-to-all --algo bruck --ranks 3 --sizes 1K --json --iters 2)
set_tests_properties(coll_cli_threads_json PROPERTIES PASS_REGULAR_EXPRESSION "\"wrong_total\": 0")
if(MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME coll_cli_mpi_4_ranks
           COMMAND ${SPORA_MPIRUN} --oversubscribe --allow-run-as-root -np 4
                   $<TARGET_FILE:spora_coll_driver> --backend mpi --op reduce-scatter --algo ring
                   --sizes 64:256K --iters 2 --warmup 1)
  set_tests_properties(coll_cli_mpi_4_ranks PROPERTIES TIMEOUT 120 PROCESSORS 2)
endif()
