# Backend test folders: tests/runtime (allocator, planner, data, checkpoints) and tests/cpu
# (every CPU kernel against the reference kernel).
spora_test_dir(runtime spora_distributed_harness spora_runtime spora_cpu)
spora_test_dir(cpu spora_cpu spora_runtime)
spora_test_dir(fusion spora_codegen spora_cpu spora_runtime)
# tests/gpu: every CUDA kernel against the reference kernel (skips without a CUDA device).
spora_test_dir(gpu spora_cuda spora_cpu spora_runtime)
# set_device("cuda") in a program: the output on a GPU, or a located error that says why not.
if(TARGET spora_cli)
  add_test(NAME gpu_set_device_cli
           COMMAND sh -c "out=$($<TARGET_FILE:spora_cli> run tests/gpu/set_device_cuda.sp 2>&1); rc=$?; echo \"$out\"; if [ $rc -eq 0 ]; then echo \"$out\" | grep -qxF '[3.0, 3.0]'; else echo \"$out\" | grep -qF 'set_device_cuda.sp:5:5: error: set_device(\"cuda\"): '; fi"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
