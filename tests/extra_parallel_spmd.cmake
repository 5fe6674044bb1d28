# The SPMD partitioner, the collective primitives and sharded runs (issue 9):
# tests/parallel/spmd_*_test.cpp -> test_parallel_spmd (4 in-process ranks), and the same
# sharded runs over MPI (tests/parallel/spmd_mpi_main.cpp, 4 oversubscribed ranks).
include(GoogleTest)
if(TARGET spora_parallel_layout)
  # spora_comm (MPI) before spora_sim: SimGrid exports MPI_Init too (its SMPI), and the first
  # library on the link line wins. spora_comm again after spora_ops: the collective kernels
  # (ops/collective.cpp) run schedules with its Executor.
  set(SPORA_SPMD_TEST_LIBS spora_comm spora_parallel_pipeline spora_parallel_partition spora_sim spora_ops spora_comm spora_autodiff
      spora_semantics spora_lang)
  # The training-step harness of `spora train-step --strategy` (backends/distributed: train_step,
  # its pipeline runner), compiled once for spora_cli and every test that drives runs.
  set(SPORA_SPMD_TEST_LIBS spora_distributed_harness ${SPORA_SPMD_TEST_LIBS})
  file(GLOB SPORA_PARALLEL_SPMD_TEST_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_*_test.cpp)
  add_executable(test_parallel_spmd ${SPORA_PARALLEL_SPMD_TEST_SOURCES}
                )
  target_link_libraries(test_parallel_spmd PRIVATE ${SPORA_SPMD_TEST_LIBS} GTest::gtest_main)
  target_compile_definitions(test_parallel_spmd PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(test_parallel_spmd WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)

  if(MPI_CXX_FOUND AND SPORA_MPIRUN)
    add_executable(test_parallel_spmd_mpi ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_mpi_main.cpp
                  )
    # Open MPI first: it must precede SimGrid (which also defines MPI_Init) among the needed
    # shared libraries, and the order of the static libraries alone does not guarantee it.
    target_link_libraries(test_parallel_spmd_mpi PRIVATE ${MPI_CXX_LIBRARIES} ${SPORA_SPMD_TEST_LIBS} GTest::gtest)
    target_compile_definitions(test_parallel_spmd_mpi PRIVATE
                               SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    add_test(NAME parallel_spmd_mpi_4_ranks
             COMMAND ${SPORA_MPIRUN} --oversubscribe --allow-run-as-root -np 4
                     -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1
                     $<TARGET_FILE:test_parallel_spmd_mpi>
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(parallel_spmd_mpi_4_ranks)
  endif()
endif()

# The command line: W2's MLP (f32) with the example strategies, 4 MPI ranks vs 1 device.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  foreach(strategy dp4 tp4 dp2tp2 dp4_zero)
    add_test(NAME parallel_spmd_cli_w2_${strategy}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_cli_test.sh $<TARGET_FILE:spora_cli>
                     ${CMAKE_SOURCE_DIR}/benchmarks/sim/w2_mlp.sp
                     ${CMAKE_SOURCE_DIR}/examples/strategies/${strategy}.json 1e-4
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(parallel_spmd_cli_w2_${strategy})
  endforeach()
endif()
# `spora train-step --strategy --ranks --profile`: every rank's timeline merged into one trace.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME parallel_spmd_cli_profile
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_profile_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_SOURCE_DIR}/benchmarks/sim/w2_mlp.sp
                   ${CMAKE_SOURCE_DIR}/examples/strategies/tp4.json 4
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_spmd_cli_profile)
  add_test(NAME parallel_pipeline_cli_profile
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_profile_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/mlp_small.sp
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_pp2.json 2 pipeline
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_pipeline_cli_profile)
endif()
# `spora ir --stage partitioned`: W2 with Megatron's column-then-row split has one all-reduce,
# of the row-split layer's [64, 512] output.
if(TARGET spora_cli)
  add_test(NAME parallel_spmd_cli_ir_partitioned
           COMMAND sh -c "$<TARGET_FILE:spora_cli> ir benchmarks/sim/w2_mlp.sp --stage partitioned --strategy examples/strategies/tp4.json | grep -F '# 1 collectives:' && $<TARGET_FILE:spora_cli> ir benchmarks/sim/w2_mlp.sp --stage partitioned --strategy examples/strategies/tp4.json | grep -F '#   all_reduce(axes=[0]) f32[64,512]'"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()

# ZeRO-1 ("optimizer_shard") and recomputation ("recompute"): tests/parallel/zero_*test.cpp and
# recompute_*test.cpp -> test_parallel_zero (in-process ranks), and the same runs over MPI.
if(TARGET spora_parallel_layout)
  file(GLOB SPORA_PARALLEL_ZERO_TEST_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/zero_*test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/recompute_*test.cpp)
  add_executable(test_parallel_zero ${SPORA_PARALLEL_ZERO_TEST_SOURCES})
  target_link_libraries(test_parallel_zero PRIVATE ${SPORA_SPMD_TEST_LIBS} GTest::gtest_main)
  target_compile_definitions(test_parallel_zero PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(test_parallel_zero WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
  if(MPI_CXX_FOUND AND SPORA_MPIRUN)
    add_executable(test_parallel_zero_mpi ${CMAKE_CURRENT_SOURCE_DIR}/parallel/zero_mpi_main.cpp)
    target_link_libraries(test_parallel_zero_mpi PRIVATE ${MPI_CXX_LIBRARIES} ${SPORA_SPMD_TEST_LIBS}
                          GTest::gtest)
    target_compile_definitions(test_parallel_zero_mpi PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    add_test(NAME parallel_zero_mpi_4_ranks
             COMMAND ${SPORA_MPIRUN} --oversubscribe --allow-run-as-root -np 4
                     -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1
                     $<TARGET_FILE:test_parallel_zero_mpi>
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(parallel_zero_mpi_4_ranks)
  endif()
endif()
