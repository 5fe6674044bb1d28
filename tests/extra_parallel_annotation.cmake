# Semi-auto parallel annotations (issue 9: shard(x, (2, 1)), shard=, @stage(k)):
# tests/parallel/annotation_*_test.cpp -> test_parallel_annotation (lowering and its errors,
# eager vs graph, the partitioner's pins, propagation from the annotations, 4 in-process ranks).
include(GoogleTest)
if(TARGET spora_parallel_search_ir AND TARGET spora_distributed_harness)
  file(GLOB SPORA_PARALLEL_ANNOTATION_TEST_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/annotation_*_test.cpp)
  add_executable(test_parallel_annotation ${SPORA_PARALLEL_ANNOTATION_TEST_SOURCES})
  target_link_libraries(test_parallel_annotation PRIVATE spora_distributed_harness spora_comm spora_parallel_partition
                        spora_parallel_search_ir spora_sim spora_ops spora_comm spora_autodiff
                        spora_semantics spora_lang GTest::gtest_main)
  target_compile_definitions(test_parallel_annotation PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(test_parallel_annotation WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                       DISCOVERY_TIMEOUT 60)
endif()
# The command line: `spora search --algo propagate` takes the pins from the program, and
# `spora train-step --mesh 4 --ranks 4` (no strategy file) trains with the propagated strategy; its
# losses and checksum equal the single-device run's (f32: 1e-4) and the hand-written tp4.json run.
# The two runs compare bit for bit, so both pin the GEMM library (SPORA_GEMM=openblas): each
# process times a shape its choice file lacks on the spot (backends/cpu/gemm_choice.h), and two
# processes may choose differently.
if(TARGET spora_cli)
  add_test(NAME parallel_annotation_cli_search
           COMMAND sh -c "$<TARGET_FILE:spora_cli> search examples/megatron_mlp.sp -c examples/clusters/dgx-a100.yaml --mesh 4 --algo propagate --no-simulate | grep -F 'net.l1.w (1, 4), net.l1.b (4,), net.l2.w (4, 1)'"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  if(MPI_CXX_FOUND AND SPORA_MPIRUN)
    add_test(NAME parallel_annotation_cli_run_mesh
             COMMAND sh -c "a=$(SPORA_GEMM=openblas $<TARGET_FILE:spora_cli> train-step examples/megatron_mlp.sp --mesh 4 --ranks 4 --steps 3 | grep '^checksum') && b=$(SPORA_GEMM=openblas $<TARGET_FILE:spora_cli> train-step benchmarks/sim/w2_mlp.sp --strategy examples/strategies/tp4.json --ranks 4 --steps 3 | grep '^checksum') && echo \"$a / $b\" && test -n \"$a\" && test \"$a\" = \"$b\""
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(parallel_annotation_cli_run_mesh)
  endif()
endif()
