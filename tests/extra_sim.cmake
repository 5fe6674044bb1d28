# The cluster simulator (issue 6): cluster specs, platforms, simulated collectives, the cost
# model, training-step programs and simulations, and the `spora sim-coll` command. Included
# from tests/CMakeLists.txt.
include(GoogleTest)
file(GLOB SPORA_SIM_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sim/*.cpp)
add_executable(test_sim ${SPORA_SIM_TEST_SOURCES})
target_link_libraries(test_sim PRIVATE spora_tool_sim spora_sim spora_parallel_partition spora_ops spora_autodiff spora_semantics
                      spora_lang CLI11::CLI11 nlohmann_json::nlohmann_json GTest::gtest_main)
target_compile_definitions(test_sim PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(test_sim WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)

# Every output option of `spora sim` for every kind of run, or an error that says why not
# (issue 19, item 8).
if(TARGET spora_cli)
  foreach(kind dp spmd pipeline)
    add_test(NAME sim_outputs_cli_${kind}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sim/sim_outputs_cli_test.sh
                     $<TARGET_FILE:spora_cli> ${kind}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
  # spora synth end to end: the schedule it writes simulated, cached, run over threads and
  # (where mpirun is) 4 MPI ranks (issue 27).
  find_program(SPORA_SYNTH_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  add_test(NAME synth_cli
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sim/synth_cli_test.sh $<TARGET_FILE:spora_cli>
                   "$<$<BOOL:${SPORA_SYNTH_MPIRUN}>:${SPORA_SYNTH_MPIRUN}>"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(synth_cli)
  foreach(command sim-coll sim-gpt search)
    add_test(NAME sim_outputs_cli_${command}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sim/sim_commands_outputs_test.sh
                     $<TARGET_FILE:spora_cli> ${command}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
