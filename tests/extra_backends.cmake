# Backend test folders: tests/runtime (allocator, planner, data, checkpoints) and tests/cpu
# (every CPU kernel against the reference kernel).
spora_test_dir(runtime spora_runtime spora_cpu)
spora_test_dir(cpu spora_cpu spora_runtime)
spora_test_dir(fusion spora_codegen spora_cpu spora_runtime)
# tests/gpu: every CUDA kernel against the reference kernel (skips without a CUDA device).
spora_test_dir(gpu spora_cuda spora_cpu spora_runtime)
