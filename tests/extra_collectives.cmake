# Collective schedules and the communication runtime (issue 5). Included from
# tests/CMakeLists.txt. These link only spora_collectives / spora_comm, not the front end.
include(GoogleTest)

# Schedules: symbolic checker sweep, text form, hand-made wrong schedules.
file(GLOB SPORA_COLLECTIVES_TEST_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/collectives/*.cpp)
add_executable(test_collectives ${SPORA_COLLECTIVES_TEST_SOURCES})
target_link_libraries(test_collectives PRIVATE spora_collectives GTest::gtest_main)
target_compile_definitions(test_collectives PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(test_collectives WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)

# Communicators and the executor, over threads (and NCCL, which skips without a GPU; and the
# device-memory contract NCCL keeps, checked over threads).
add_executable(test_comm
  ${CMAKE_CURRENT_SOURCE_DIR}/comm/threads_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/comm/nccl_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/comm/device_check_test.cpp)
target_link_libraries(test_comm PRIVATE spora_comm GTest::gtest_main)
gtest_discover_tests(test_comm WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} DISCOVERY_TIMEOUT 60)

# The same matrix over MPI: one executable under mpirun with 4 oversubscribed ranks.
if(MPI_CXX_FOUND)
  add_executable(test_comm_mpi ${CMAKE_CURRENT_SOURCE_DIR}/comm/mpi_test.cpp)
  target_link_libraries(test_comm_mpi PRIVATE spora_comm GTest::gtest)
  find_program(SPORA_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  if(SPORA_MPIRUN)
    add_test(NAME comm_mpi_4_ranks
             COMMAND ${SPORA_MPIRUN} --oversubscribe --allow-run-as-root -np 4
                     $<TARGET_FILE:test_comm_mpi>)
    spora_mpi_test_properties(comm_mpi_4_ranks)
  endif()
endif()

# The collectives benchmark and the standalone `spora-coll` driver live with the benchmarks.
include(${CMAKE_SOURCE_DIR}/benchmarks/collectives/collectives.cmake OPTIONAL)
