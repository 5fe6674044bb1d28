# Meshes, layouts, redistribution and the sharding rules of every primitive (issue 9). Included
# from tests/CMakeLists.txt.
include(GoogleTest)
add_executable(test_parallel_layout
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/layout/layout_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/layout/redistribution_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/parallel/layout/sharding_rules_test.cpp)
target_link_libraries(test_parallel_layout PRIVATE spora_parallel_layout spora_ops spora_autodiff
                      spora_semantics spora_lang GTest::gtest_main)
gtest_discover_tests(test_parallel_layout WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
