# `spora calibrate`'s machine model (benchmarks/calibrate/). Included from tests/CMakeLists.txt.
include(GoogleTest)
add_executable(test_calibrate ${CMAKE_CURRENT_SOURCE_DIR}/calibrate/calibrate_test.cpp)
target_link_libraries(test_calibrate PRIVATE spora_comm ${MPI_CXX_LIBRARIES} spora_calibrate GTest::gtest_main)
gtest_discover_tests(test_calibrate WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
