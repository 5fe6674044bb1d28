# Strategy search (issue 9): tests/parallel/search_*_test.cpp -> test_parallel_search. The
# algorithms need only the search library; the cost graph of a real step needs the front end,
# the simulator's step program and the layouts.
include(GoogleTest)
file(GLOB SPORA_PARALLEL_SEARCH_TEST_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/search_*_test.cpp)
add_executable(test_parallel_search ${SPORA_PARALLEL_SEARCH_TEST_SOURCES}
  ${CMAKE_SOURCE_DIR}/tools/cmd_search.cpp)
target_link_libraries(test_parallel_search PRIVATE spora_parallel_search spora_parallel_search_ir
                      spora_sim CLI11::CLI11 ${SPORA_TEST_LIBS})
target_compile_definitions(test_parallel_search PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(test_parallel_search WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
