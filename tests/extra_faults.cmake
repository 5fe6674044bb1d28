# Faults injected into whole runs of the spora program (tests/faults/README.md): a full disk
# while writing, SIGINT / SIGTERM mid-training, damaged dataset files, a rank that hangs, and
# determinism across runs and thread counts. The readers' every-byte cases are gtests
# (tests/runtime/data_faults_test.cpp, DataFaults.*).
if(TARGET spora_cli)
  set(faults ${CMAKE_CURRENT_SOURCE_DIR}/faults)
  add_test(NAME faults_disk_full
           COMMAND ${faults}/disk_full_test.sh $<TARGET_FILE:spora_cli> ${CMAKE_SOURCE_DIR})
  add_test(NAME faults_interrupt COMMAND ${faults}/interrupt_test.sh $<TARGET_FILE:spora_cli>)
  add_test(NAME faults_dataset_files COMMAND ${faults}/dataset_test.sh $<TARGET_FILE:spora_cli>)
  add_test(NAME faults_determinism
           COMMAND ${faults}/determinism_test.sh $<TARGET_FILE:spora_cli> ${faults}/determinism.sp)
  set_tests_properties(faults_disk_full faults_interrupt faults_dataset_files faults_determinism
                       PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
  # determinism_test.sh runs 3 threads of its own.
  set_tests_properties(faults_determinism PROPERTIES PROCESSORS 2)
endif()
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME faults_rank_hangs
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/faults/hang_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed/forever.sp)
  spora_mpi_test_properties(faults_rank_hangs)
endif()
