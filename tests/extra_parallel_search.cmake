# Strategy search (issue 9): tests/parallel/search_*_test.cpp -> test_parallel_search. The
# algorithms need only the search library; the cost graph of a real step needs the front end,
# the simulator's step program and the layouts.
include(GoogleTest)
file(GLOB SPORA_PARALLEL_SEARCH_TEST_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/search_*_test.cpp)
add_executable(test_parallel_search ${SPORA_PARALLEL_SEARCH_TEST_SOURCES})
# search_linear_test.cpp trains the strategies it finds with the training-step harness
# (spora_distributed_harness, backends/distributed/train_step.h).
target_link_libraries(test_parallel_search PRIVATE spora_tool_search spora_distributed_harness spora_parallel_search
                      spora_parallel_search_ir spora_sim spora_runtime CLI11::CLI11 ${SPORA_TEST_LIBS})
target_compile_definitions(test_parallel_search PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(test_parallel_search WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
# The dp search of the W4 block on a 3-D mesh (2x2x2: up to 360 candidates a node, capped at
# 64) finishes well inside a minute and writes a strategy with a layout per parameter.
if(TARGET spora_cli)
  add_test(NAME parallel_search_cli_w4_3d
           COMMAND sh -c "s=$(mktemp \"$\{TMPDIR:-/tmp\}/spora_search_3d.XXXXXX.json\") && $<TARGET_FILE:spora_cli> search benchmarks/sim/w4_block.sp --cluster examples/clusters/dgx-a100.yaml --mesh 2x2x2 --algo dp --top 1 -o \"$s\" && grep -qF '\"mesh\": [2, 2, 2]' \"$s\" && grep -q '\"net.wq\": ' \"$s\" && grep -q '\"predicted_step_seconds\"' \"$s\"; rc=$?; rm -f \"$s\"; exit $rc"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(parallel_search_cli_w4_3d PROPERTIES TIMEOUT 60)
endif()
# A search on a named mesh (--mesh tp=4) writes the axis names, which its ops' strategies
# ("d1:tp") use, so `spora sim` reads the file back; the search scores its candidates with the
# simulator too (a simulated step, not "-").
if(TARGET spora_cli)
  add_test(NAME parallel_search_cli_named_axes
           COMMAND sh -c "s=$(mktemp \"$\{TMPDIR:-/tmp\}/spora_search_named.XXXXXX.json\") && $<TARGET_FILE:spora_cli> search examples/megatron_mlp.sp -c examples/clusters/dgx-a100.yaml --mesh tp=4 --algo propagate -o \"$s\" > \"$s.log\" && grep -qF '\"axes\": [\"tp\"]' \"$s\" && grep -Eq '^1 +[0-9.]+ us +[0-9.]+ us' \"$s.log\" && $<TARGET_FILE:spora_cli> sim examples/megatron_mlp.sp -c examples/clusters/dgx-a100.yaml --strategy \"$s\" | grep -q all_reduce; rc=$?; rm -f \"$s\" \"$s.log\"; exit $rc"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
# `spora search --stages 2 --micro-batches 4` writes a pipeline strategy ("split": "auto") that
# `spora train-step` trains with: W2 on 2 stages x 2 devices equals the single-device run (f32, 1e-4).
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME parallel_search_cli_pipeline
           COMMAND sh -c "s=$(mktemp \"$\{TMPDIR:-/tmp\}/spora_search_pp.XXXXXX.json\") && $<TARGET_FILE:spora_cli> search benchmarks/sim/w2_mlp.sp -c examples/clusters/dgx-a100.yaml --mesh 2 --stages 2 --micro-batches 4 --top 1 -o \"$s\" && grep -q '\"stages\": 2' \"$s\" && tests/parallel/spmd_cli_test.sh $<TARGET_FILE:spora_cli> benchmarks/sim/w2_mlp.sp \"$s\" 1e-4; rc=$?; rm -f \"$s\"; exit $rc"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_search_cli_pipeline)
  # `spora search --stages auto` chooses the pipeline depth: on two devices over a slow link
  # with 5.5 MB each, no unpipelined W2 plan fits (the smallest, sharded over the link, needs
  # ~6 MB), while 2 stages of one device fit (4.9 MB) and simulate at ~0.5 ms; the chosen
  # pipeline trains on 2 ranks to the single-device result.
  add_test(NAME parallel_search_cli_stages_auto
           COMMAND sh -c "s=$(mktemp \"$\{TMPDIR:-/tmp\}/spora_search_auto.XXXXXX.json\") && $<TARGET_FILE:spora_cli> search benchmarks/sim/w2_mlp.sp -c tests/parallel/slow_link_pair.yaml --mesh 2 --stages auto --memory-limit 0.0055 --top 1 -o \"$s\" > \"$s.log\" && cat \"$s.log\" && grep -q 'chosen: 2 stages of mesh 1, 2 micro-batches' \"$s.log\" && grep -q '\"stages\": 2' \"$s\" && tests/parallel/spmd_cli_test.sh $<TARGET_FILE:spora_cli> benchmarks/sim/w2_mlp.sp \"$s\" 1e-4 2; rc=$?; rm -f \"$s\" \"$s.log\"; exit $rc"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(parallel_search_cli_stages_auto)
endif()
