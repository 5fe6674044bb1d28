# The distributed runtime (backends/distributed): a user's own program, unchanged, on 2 and 4
# MPI ranks against one device (tests/distributed/run_test.sh). mlp_f64.sp trains in f64 with
# std.optim's Adam, shuffled Fashion-MNIST batches (limit=) and an evaluation pass: every printed
# line within 1e-6 and the saved checkpoint within 1e-10 of the one-device run.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  set(ckpt -- mlp_f64.ckpt ${dist}/compare_ckpt.sp 1e-10)
  foreach(run "dp;2;--strategy;dp" "dp;4;--strategy;dp" "tp;2;--strategy;${dist}/tp2.json"
          "tp;4;--strategy;${dist}/tp4.json" "dp2tp2;4;--strategy;${dist}/dp2tp2.json"
          "mesh;2;--mesh;dp=2")
    list(GET run 0 name)
    list(GET run 1 ranks)
    list(GET run 2 flag)
    list(GET run 3 value)
    add_test(NAME distributed_mlp_f64_${name}_${ranks}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/mlp_f64.sp 1e-6 ${ranks}
                     ${flag} ${value} ${ckpt}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_mlp_f64_${name}_${ranks})
  endforeach()
endif()
