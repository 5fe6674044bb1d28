# Strategy search (issue 9): tests/parallel/search_*_test.cpp -> test_parallel_search. Links the
# search library only (the core knows nothing of the front end).
include(GoogleTest)
file(GLOB SPORA_PARALLEL_SEARCH_TEST_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/search_*_test.cpp)
add_executable(test_parallel_search ${SPORA_PARALLEL_SEARCH_TEST_SOURCES})
target_link_libraries(test_parallel_search PRIVATE spora_parallel_search GTest::gtest_main)
gtest_discover_tests(test_parallel_search WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
