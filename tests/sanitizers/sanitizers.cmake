# The sanitizer suites' own pieces (README.md of this folder): the preloaded dlclose() that
# keeps Open MPI's plugins mapped and the test that the leak suppressions hide Open MPI's
# leaks and nothing else.
if(SPORA_SANITIZE AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_library(spora_keep_mpi_plugins SHARED ${CMAKE_CURRENT_LIST_DIR}/keep_mpi_plugins.c)
  # Loaded into every process of the suite, most of them not built with sanitizers.
  set_property(TARGET spora_keep_mpi_plugins PROPERTY COMPILE_OPTIONS "")
  set_property(TARGET spora_keep_mpi_plugins PROPERTY LINK_OPTIONS "")
  target_link_libraries(spora_keep_mpi_plugins PRIVATE ${CMAKE_DL_LIBS})
  add_executable(leak_probe ${CMAKE_CURRENT_LIST_DIR}/leak_probe.cpp)
  target_link_libraries(leak_probe PRIVATE MPI::MPI_CXX)
  add_test(NAME sanitizer_leak_suppressions
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/leak_probe_test.sh ${SPORA_MPIRUN}
                   $<TARGET_FILE:leak_probe> ${CMAKE_CURRENT_LIST_DIR}/lsan_openmpi.supp
                   $<TARGET_FILE:spora_keep_mpi_plugins>)
  set_tests_properties(sanitizer_leak_suppressions PROPERTIES TIMEOUT 120)
endif()

# The TSan run's probe (race_probe.cpp): run.sh tsan checks that its settings report a race of
# plain threads and one of OpenMP, and none in correctly synchronised OpenMP code.
if(SPORA_TSAN)
  add_executable(race_probe ${CMAKE_CURRENT_LIST_DIR}/race_probe.cpp)
  find_package(Threads REQUIRED)
  target_link_libraries(race_probe PRIVATE OpenMP::OpenMP_CXX Threads::Threads)
endif()
