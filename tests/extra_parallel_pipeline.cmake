# Pipeline parallelism (issue 9): tests/parallel/pipeline_*_test.cpp -> test_parallel_pipeline
# (schedules, stage assignment, pipelined runs on in-process ranks against one device), and the
# command line (`spora train-step --strategy pp.json --ranks N` under mpirun, `spora ir` of stages).
include(GoogleTest)
if(TARGET spora_distributed_harness)
  file(GLOB SPORA_PARALLEL_PIPELINE_TEST_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_*test.cpp)
  add_executable(test_parallel_pipeline ${SPORA_PARALLEL_PIPELINE_TEST_SOURCES})
  target_link_libraries(test_parallel_pipeline PRIVATE spora_distributed_harness spora_comm spora_parallel_pipeline
                        spora_parallel_partition spora_sim spora_ops spora_comm spora_autodiff
                        spora_semantics spora_lang GTest::gtest_main)
  target_compile_definitions(test_parallel_pipeline PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(test_parallel_pipeline WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                       DISCOVERY_TIMEOUT 60)
endif()
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME parallel_pipeline_cli_pp2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_cli_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/mlp_small.sp
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_pp2.json 2 1e-10
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_pipeline_cli_pp2)
  # The split from `@stage(1)` in the program (no "split" in the strategy).
  add_test(NAME parallel_pipeline_cli_stage_markers
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_cli_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/mlp_staged.sp
                   ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_markers.json 2 1e-10
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_pipeline_cli_stage_markers)
  # W2 (f32) with examples/strategies/pp2.json: 2 stages x dp2 on 4 MPI ranks vs 1 device.
  add_test(NAME parallel_pipeline_cli_w2_pp2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/spmd_cli_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_SOURCE_DIR}/benchmarks/sim/w2_mlp.sp
                   ${CMAKE_SOURCE_DIR}/examples/strategies/pp2.json 1e-4
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_pipeline_cli_w2_pp2)
endif()
if(TARGET spora_cli)
  add_test(NAME parallel_pipeline_cli_ir
           COMMAND sh -c "$<TARGET_FILE:spora_cli> ir tests/parallel/mlp_small.sp --stage partitioned --strategy tests/parallel/pipeline_pp2.json | grep -F '#   sends f64[2,32] [-, -] to stage 1'"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  add_test(NAME parallel_pipeline_sim_cli
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/pipeline_sim_cli_test.sh $<TARGET_FILE:spora_cli>
                   benchmarks/sim/w2_mlp.sp examples/clusters/dgx-a100.yaml
                   examples/strategies/pp2.json 2 4
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  add_test(NAME parallel_pipeline_cli_ir_stage_markers
           COMMAND sh -c "$<TARGET_FILE:spora_cli> ir tests/parallel/mlp_staged.sp --stage partitioned --strategy tests/parallel/pipeline_markers.json | grep -F '# stage 1: parameters net.l3.w, net.l3.b;'"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
