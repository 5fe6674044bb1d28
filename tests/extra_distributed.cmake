# The distributed runtime (backends/distributed): a user's own program, unchanged, on 2 and 4
# MPI ranks against one device (tests/distributed/run_test.sh). mlp_f64.sp trains in f64 with
# its own Adam, shuffled Fashion-MNIST batches (limit=) and an evaluation pass: every printed
# line within 1e-6 and the saved checkpoint within 1e-10 of the one-device run; also under ZeRO
# stages 1-3 (spmd_runtime.h step 6), alone and with dp x tp.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  set(ckpt -- mlp_f64.ckpt ${dist}/compare_ckpt.sp 1e-10)
  foreach(run "dp;2;--strategy;dp" "dp;4;--strategy;dp" "tp;2;--strategy;${dist}/tp2.json"
          "tp;4;--strategy;${dist}/tp4.json" "dp2tp2;4;--strategy;${dist}/dp2tp2.json"
          "mesh;2;--mesh;dp=2" "zero1;2;--zero;1" "zero2;4;--zero;2" "zero3;4;--zero;3"
          "dp2tp2_zero3;4;--strategy;${dist}/dp2tp2_zero3.json")
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

# A model built and used in straight-line code (W2: one SGD step in main, no loop), whose
# record the lowering would keep as separate fields: LowerOptions::materialize_models gives it a
# record node, so the plan's layouts are pinned on it and the step runs tensor-parallel on 4
# ranks, printing the one-device loss.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_w2_straight_line_tp_4
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/run_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_SOURCE_DIR}/benchmarks/sim/w2_mlp.sp 1e-5 4
                   --expect "rank 0 of 4 .*: [1-9][0-9]* primitives ran on shards"
                   --strategy ${CMAKE_SOURCE_DIR}/examples/strategies/tp4.json --stats
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_w2_straight_line_tp_4)
endif()

# Data the program holds whole (backends/distributed/batch_cut.h): x and y made in main, cut
# over the data-parallel axis where value_and_grad reads them, on 2 and 4 ranks and under dp x tp:
# every printed line within 1e-10 and the checkpoint within 1e-12 of one device, and the run
# says it cut them.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  foreach(run "dp;2;dp" "dp;4;dp" "dp2tp2;4;${dist}/dp2tp2.json")
    list(GET run 0 name)
    list(GET run 1 ranks)
    list(GET run 2 strategy)
    add_test(NAME distributed_held_data_${name}_${ranks}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/held_data_mlp.sp 1e-10
                     ${ranks} --expect "stats: rank 0 .*, 2 values cut where a loss reads them"
                     --strategy ${strategy} --stats
                     -- held_data_mlp.ckpt ${dist}/compare_ckpt.sp 1e-12
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_held_data_${name}_${ranks})
  endforeach()
  # The weight gradients' fused groups (matmul over the batch's rows, then the update) run their
  # kernels on 2 ranks: the matmul on the shards, its all-reduce, the kernel on the whole result
  # (both layers' groups, compiled because the training loop runs them, over 5 steps: 10).
  add_test(NAME distributed_held_data_fused_on_shards
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/held_data_mlp.sp --ranks 2 --strategy dp --stats
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(distributed_held_data_fused_on_shards PROPERTIES PASS_REGULAR_EXPRESSION
    "stats: fused kernels run on shards: 10 ")
  spora_mpi_test_properties(distributed_held_data_fused_on_shards)
endif()

# Pipeline stages (spmd_runtime.h step 9): the same program with a module-level `let batch`
# (which a pipeline needs to build the step of a micro-batch), on 2 stages with 4 micro-batches
# (1F1B) and on 2 stages x 2 data-parallel ranks with 2 micro-batches (GPipe), its own Adam
# updating each stage's parameters where they live: every printed line within 1e-6 and the
# checkpoint within 1e-10 of one device.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  foreach(run "pp2;2;${dist}/pp2.json" "dp2pp2;4;${dist}/dp2pp2.json")
    list(GET run 0 name)
    list(GET run 1 ranks)
    list(GET run 2 strategy)
    add_test(NAME distributed_pipeline_mlp_${name}_${ranks}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/pipeline_mlp.sp 1e-6
                     ${ranks} --expect "stats: pipeline: 16 steps run as the schedule"
                     --strategy ${strategy} --stats
                     -- pipeline_mlp.ckpt ${dist}/compare_ckpt.sp 1e-10
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_pipeline_mlp_${name}_${ranks})
  endforeach()
  add_test(NAME distributed_error_pipeline_batch
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 2 --strategy ${dist}/pp2.json)
  set_tests_properties(distributed_error_pipeline_batch PROPERTIES PASS_REGULAR_EXPRESSION
    "mlp_f64.sp has no module-level `let batch = <integer>`: the pipeline of .*pp2.json sets it to the micro-batch")
  add_test(NAME distributed_error_pipeline_zero
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/pipeline_mlp.sp --ranks 2 --strategy ${dist}/pp2.json --zero 1)
  set_tests_properties(distributed_error_pipeline_zero PROPERTIES PASS_REGULAR_EXPRESSION
    "--zero does not combine with the pipeline of .*pp2.json")
endif()

# ZeRO: rank 0's peak memory and collectives shrink and grow stage by stage.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_zero_memory_4
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/zero_memory_test.sh
                   $<TARGET_FILE:spora_cli> ${CMAKE_CURRENT_SOURCE_DIR}/distributed/mlp_f64.sp
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_zero_memory_4)
endif()

# set_parallel(...) in main: the same output as the flags it stands for; bad calls are errors.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_set_parallel
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/set_parallel_test.sh
                   $<TARGET_FILE:spora_cli> ${CMAKE_CURRENT_SOURCE_DIR}/distributed
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_set_parallel)
endif()

# Memory: rank 0's measured peak under 8 strategies within 10% of `spora sim`'s prediction.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_memory_prediction
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/memory_prediction_test.sh
                   $<TARGET_FILE:spora_cli> ${CMAKE_CURRENT_SOURCE_DIR}/distributed
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_memory_prediction)
endif()

# Recomputation: the same lines as one device (--recompute all, a strategy's "recompute" list),
# and rank 0's peak memory lower than without it.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  foreach(run "all;--recompute;all" "b1;--strategy;${dist}/recompute_b1.json")
    list(GET run 0 name)
    list(GET run 1 flag)
    list(GET run 2 value)
    add_test(NAME distributed_recompute_${name}_2
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/deep_mlp_recompute.sp 1e-5 2
                     ${flag} ${value}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_recompute_${name}_2)
  endforeach()
  add_test(NAME distributed_recompute_memory_2
           COMMAND ${dist}/recompute_memory_test.sh $<TARGET_FILE:spora_cli> ${dist}/deep_mlp_recompute.sp
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_recompute_memory_2)
  add_test(NAME distributed_error_recompute
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/deep_mlp_recompute.sp --ranks 2 --strategy ${dist}/bad_recompute.json)
  set_tests_properties(distributed_error_recompute PROPERTIES PASS_REGULAR_EXPRESSION
    "bad_recompute.json: recompute names 'net.b3', which is not a layer the program differentiates \\(its layers: net.b1, net.b2, net.inp, net.out\\)")
endif()

# W4 (a Transformer block) with Megatron tensor parallelism, with and without sequence
# parallelism, trained with std.optim's Adam: the same lines and checkpoint as one device; and the
# collectives sequence parallelism trades all-reduces for.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  foreach(run "tp2;2" "tp2_sp;2" "tp4_sp;4")
    list(GET run 0 name)
    list(GET run 1 ranks)
    add_test(NAME distributed_w4_${name}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/w4_block_train.sp 1e-5 ${ranks}
                     --strategy ${dist}/w4_${name}.json -- w4.ckpt ${dist}/compare_w4.sp 1e-5
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_w4_${name})
  endforeach()
  add_test(NAME distributed_w4_sp_collectives
           COMMAND ${dist}/sp_collectives_test.sh $<TARGET_FILE:spora_cli> ${dist}/w4_block_train.sp
                   ${dist}/w4_tp2.json ${dist}/w4_tp2_sp.json
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_w4_sp_collectives)
endif()

# A strategy that does not fit the program: a located error before main() runs.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  add_test(NAME distributed_error_unknown_name
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 2 --strategy ${dist}/bad_name.json)
  set_tests_properties(distributed_error_unknown_name PROPERTIES PASS_REGULAR_EXPRESSION
    "bad_name.json: 'net.w3' names no field of a record the program builds \\(fields: net.b1, net.b2, net.w1, net.w2\\)")
  add_test(NAME distributed_error_split
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 3 --strategy ${dist}/bad_split.json)
  set_tests_properties(distributed_error_split PROPERTIES PASS_REGULAR_EXPRESSION
    "bad_split.json: the layout \"\\[-, tp\\]\" of net.w1 does not fit its type f64\\[784,32\\] on the mesh 3: cannot split dimension 1 of size 32 over mesh axis 0 of 3 devices")
  add_test(NAME distributed_error_mesh
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 4 --strategy ${dist}/tp2.json)
  set_tests_properties(distributed_error_mesh PROPERTIES PASS_REGULAR_EXPRESSION
    "spora run: error: the mesh 2 of .*tp2.json has 2 devices, but --ranks is 4")
  add_test(NAME distributed_error_eager
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 2 --mode eager)
  set_tests_properties(distributed_error_eager PROPERTIES PASS_REGULAR_EXPRESSION
    "spora run: error: --ranks runs a program in graph mode")
  add_test(NAME distributed_error_zero_stage
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/mlp_f64.sp --ranks 2 --strategy ${dist}/bad_zero.json)
  set_tests_properties(distributed_error_zero_stage PROPERTIES PASS_REGULAR_EXPRESSION
    "bad_zero.json: \"zero\": the stage must be 0, 1, 2 or 3, not 4")
  add_test(NAME distributed_error_zero_no_record
           COMMAND $<TARGET_FILE:spora_cli> run ${dist}/no_model.sp --ranks 2 --zero 1)
  set_tests_properties(distributed_error_zero_no_record PROPERTIES PASS_REGULAR_EXPRESSION
    "ZeRO stage 1 shards the records of a model .* and the program builds none")
  foreach(t unknown_name split zero_no_record)
    spora_mpi_test_properties(distributed_error_${t})
  endforeach()
  # A model whose update is written inline in main (tree_map) is still a record to shard: ZeRO-1
  # places its parameter once and its gradient at each of the 3 steps (the gradient record
  # value_and_grad builds), and the run prints the one-device losses.
  add_test(NAME distributed_zero1_inlined_update_2
           COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/inlined_update.sp 1e-12 2
                   --expect "4 parameters placed" --zero 1 --stats
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_zero1_inlined_update_2)
  # A rank killed mid-run: every rank ends within 10 s, non-zero, the dead rank named once.
  add_test(NAME distributed_rank_killed
           COMMAND ${dist}/kill_test.sh $<TARGET_FILE:spora_cli> ${dist}/forever.sp)
  spora_mpi_test_properties(distributed_rank_killed)
endif()

# Train on 4 ranks (dp x tp), save, load on 1 rank and continue = one uninterrupted device run.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_checkpoint_4_to_1
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/ckpt_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed 4
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed/dp2tp2.json)
  spora_mpi_test_properties(distributed_checkpoint_4_to_1)
endif()

# The examples, unchanged but for limit= (std.optim's Adam and cosine schedule, report,
# log_epoch, save_curves, save): every line within 2e-3 of one device (they print 4 digits).
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  set(strategies ${CMAKE_SOURCE_DIR}/examples/strategies)
  foreach(run "fashion_mlp;dp;2;--strategy;dp" "fashion_mlp;dp;4;--strategy;dp"
          "fashion_mlp;tp;2;--strategy;${strategies}/tp2.json"
          "fashion_mlp;tp;4;--strategy;${strategies}/tp4.json"
          "fashion_mlp;dp2tp2;4;--strategy;${strategies}/dp2tp2.json"
          "fashion_mlp;zero3;4;--zero;3" "fashion_lenet;dp;2;--strategy;dp"
          "fashion_lenet;dp;4;--strategy;dp"
          "fashion_mlp;pp2;2;--strategy;${strategies}/fashion_pp2.json")
    list(GET run 0 prog)
    list(GET run 1 name)
    list(GET run 2 ranks)
    list(GET run 3 flag)
    list(GET run 4 value)
    add_test(NAME distributed_${prog}_${name}_${ranks}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/${prog}_limit.sp 2e-3
                     ${ranks} ${flag} ${value}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_${prog}_${name}_${ranks})
  endforeach()
endif()

# The forward layers, the loss's gradient and the biases' updates are fusion groups whose nodes
# run on the batch's rows (or read a gradient summed first): under dp their kernels run on each
# rank's shards, compiled for the shards' shapes, and the run still matches one device. Only a
# group's first call with new shapes runs node by node (fewer than 10 here; a forward layer whose
# matmul ran on the rows and whose kernel then refused the row-cut result made it 40).
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_fashion_mlp_local_kernels_2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/run_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed/fashion_mlp_limit.sp 2e-3 2
                   --expect "compiled kernels \\([1-9][0-9]* more for other argument shapes\\); [0-9]+ fused launches, [0-9] node-by-node runs"
                   --strategy dp --stats
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_fashion_mlp_local_kernels_2)
endif()

# ZeRO-1 on a program whose optimizer has a schedule (a closure: the update is inlined into the
# loop, where no record of the optimizer's is built): its gradients are still reduce-scattered
# onto their shards (the gradient record value_and_grad builds), not all-reduced whole, and the
# run prints the one-device lines.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_fashion_mlp_zero1_2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/run_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed/fashion_mlp_limit.sp 2e-3 2
                   --expect "collectives: .*reduce_scatter [1-9]" --zero 1 --stats
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_fashion_mlp_zero1_2)
endif()

# --auto: the strategy search on the program's training step picks the layouts, then main() runs.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_fashion_mlp_auto_2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/run_test.sh $<TARGET_FILE:spora_cli>
                   ${CMAKE_CURRENT_SOURCE_DIR}/distributed/fashion_mlp_limit.sp 2e-3 2 --auto
                   --cluster ${CMAKE_SOURCE_DIR}/examples/clusters/dgx-a100.yaml
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_fashion_mlp_auto_2)
endif()

# Two hosts: 2 ranks in two network namespaces joined by a veth pair (mpirun, a hostfile, TCP) print
# and save exactly what 2 ranks on one host do. Skipped (77) where namespaces cannot be made.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  add_test(NAME distributed_two_hosts
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/multihost_test.sh
                   $<TARGET_FILE:spora_cli> ${CMAKE_CURRENT_SOURCE_DIR}/distributed/fashion_mlp_limit.sp
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  spora_mpi_test_properties(distributed_two_hosts)
  set_tests_properties(distributed_two_hosts PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The code path of GPU ranks without a GPU: SPORA_COMM_DEVICE_CHECK=1 makes the collectives'
# communicator a device-memory one over MPI (backends/comm/device_check.h: NCCL's contract,
# checked), so every collective stages its data through the communicator's own buffers and
# posts its messages in groups, as over NCCL. The same lines and checkpoint as one device.
if(TARGET spora_cli AND MPI_CXX_FOUND AND SPORA_MPIRUN)
  set(dist ${CMAKE_CURRENT_SOURCE_DIR}/distributed)
  foreach(run "mlp_f64_dp;4;mlp_f64.sp;1e-6;--strategy;dp;mlp_f64.ckpt;compare_ckpt.sp;1e-10"
          "mlp_f64_dp2tp2_zero3;4;mlp_f64.sp;1e-6;--strategy;${dist}/dp2tp2_zero3.json;mlp_f64.ckpt;compare_ckpt.sp;1e-10"
          "mlp_f64_tp4;4;mlp_f64.sp;1e-6;--strategy;${dist}/tp4.json;mlp_f64.ckpt;compare_ckpt.sp;1e-10"
          "w4_tp4_sp;4;w4_block_train.sp;1e-5;--strategy;${dist}/w4_tp4_sp.json;w4.ckpt;compare_w4.sp;1e-5")
    list(GET run 0 name)
    list(GET run 1 ranks)
    list(GET run 2 prog)
    list(GET run 3 tol)
    list(GET run 4 flag)
    list(GET run 5 value)
    list(GET run 6 ckpt_file)
    list(GET run 7 compare)
    list(GET run 8 ckpt_tol)
    add_test(NAME distributed_device_check_${name}
             COMMAND ${dist}/run_test.sh $<TARGET_FILE:spora_cli> ${dist}/${prog} ${tol} ${ranks}
                     ${flag} ${value} -- ${ckpt_file} ${dist}/${compare} ${ckpt_tol}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    spora_mpi_test_properties(distributed_device_check_${name})
    set_tests_properties(distributed_device_check_${name} PROPERTIES ENVIRONMENT
                         "OMPI_MCA_rmaps_base_oversubscribe=1;SPORA_COMM_DEVICE_CHECK=1")
  endforeach()
endif()
