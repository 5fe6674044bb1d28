# The cluster simulator (issue 6): cluster specs, platforms, simulated collectives, the cost
# model, training-step programs and simulations, and the `spora sim-coll` command. Included
# from tests/CMakeLists.txt.
include(GoogleTest)
file(GLOB SPORA_SIM_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sim/*.cpp)
add_executable(test_sim ${SPORA_SIM_TEST_SOURCES})
target_link_libraries(test_sim PRIVATE spora_tool_sim spora_sim spora_parallel_partition spora_ops spora_autodiff spora_semantics
                      spora_lang CLI11::CLI11 GTest::gtest_main)
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
  foreach(command sim-coll sim-gpt search)
    add_test(NAME sim_outputs_cli_${command}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sim/sim_commands_outputs_test.sh
                     $<TARGET_FILE:spora_cli> ${command}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
