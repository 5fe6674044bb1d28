# `spora sim-gpt` and sim/transformer (the Megatron-LM step model): the paper's FLOP formula,
# schedules, collective closed forms against SimGrid, errors, determinism, a golden report.
# Included from tests/CMakeLists.txt.
include(GoogleTest)
file(GLOB SPORA_SIM_GPT_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sim/transformer/*.cpp)
add_executable(test_sim_gpt ${SPORA_SIM_GPT_TEST_SOURCES} ${CMAKE_SOURCE_DIR}/tools/cmd_sim_gpt.cpp)
target_link_libraries(test_sim_gpt PRIVATE spora_sim_transformer spora_sim CLI11::CLI11 GTest::gtest_main)
target_compile_definitions(test_sim_gpt PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(test_sim_gpt WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
