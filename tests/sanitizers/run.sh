#!/usr/bin/env bash
# Runs a sanitizer build's tests with the sanitizers' settings (README.md of this folder):
#   tests/sanitizers/run.sh asan BUILD_DIR [ctest arguments]    the whole suite, ASan + UBSan
#   tests/sanitizers/run.sh tsan BUILD_DIR [gtest arguments]    the threaded parts, TSan
# (./spora test --sanitize and ./spora test --tsan configure and build BUILD_DIR, then run this.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode="$1" build="$2"
shift 2
# UBSan: a report stops the process (the build also sets -fno-sanitize-recover=undefined).
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

case "$mode" in
  asan)
    # Leaks are checked in every process, Open MPI's own ones suppressed by module
    # (lsan_openmpi.supp; keep_mpi_plugins.c keeps its plugins mapped so that they can be).
    # The preloaded library comes before libasan in the link order, which ASan accepts when told.
    # Open MPI's libraries keep no frame pointers: the default unwinder stops one frame into
    # them ("<unknown module>"), so leaks are unwound with the slow (DWARF) unwinder.
    # A request larger than memory returns null, as the system allocator's does, so that a
    # program's "out of memory" error (golden d20_out_of_memory) is what the test sees.
    # __tls_get_addr is not intercepted: LSan misreads this glibc's dynamic TLS blocks and its
    # tracer crashed scanning one at exit (google/sanitizers#1322; a 4-rank run of
    # distributed_fashion_mlp_dp2tp2_4, every time); static TLS and stacks are still scanned.
    export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:verify_asan_link_order=0:check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1:intercept_tls_get_addr=0"
    # The list of suppressions used is not printed: it would join the output that tests compare.
    export LSAN_OPTIONS="suppressions=$here/lsan_openmpi.supp:print_suppressions=0"
    export LD_PRELOAD="$build/lib/libspora_keep_mpi_plugins.so${LD_PRELOAD:+:$LD_PRELOAD}"
    cd "$build"
    exec ctest --output-on-failure -j "${SPORA_JOBS:-$(nproc)}" "$@"
    ;;
  tsan)
    # The OpenMP kernels run on LLVM's libomp (the TSan build is clang's) with its Archer tool,
    # which tells TSan about OpenMP's barriers, tasks and reductions; OpenBLAS's own threads
    # are not instrumented, so BLAS runs on one thread.
    archer="$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -z "$archer" ]; then
      echo "run.sh: libarcher.so not found (Debian package libomp-dev / libomp-14-dev)" >&2
      exit 2
    fi
    export OMP_TOOL_LIBRARIES="$archer"
    export ARCHER_OPTIONS="verbose=0"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"
    export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"
    cd "$here/../.."
    # The probe first: these settings must report a race of plain threads and one in OpenMP,
    # and nothing in correctly synchronised OpenMP code, or a silent run below means nothing.
    for probe in threads:race omp-race:race omp-clean:clean; do
      out="$("$build/bin/race_probe" "${probe%%:*}" 2>&1)" && rc=0 || rc=$?
      got=clean
      grep -q "WARNING: ThreadSanitizer: data race" <<<"$out" && got=race
      [ "$got" = clean ] && [ $rc -ne 0 ] && got="exit $rc"
      if [ "$got" != "${probe#*:}" ]; then
        echo "run.sh: race_probe ${probe%%:*}: $got, not ${probe#*:}" >&2
        echo "$out" >&2
        exit 1
      fi
      echo "run.sh: race_probe ${probe%%:*}: $got, as it must be"
    done
    failed=0
    # The in-process communicator (every collective schedule over threads), the runtime with
    # the data pipeline's prefetch thread, and every CPU kernel with OpenMP's threads.
    for t in test_comm test_runtime test_cpu; do
      echo "run.sh: $t $*"
      "$build/bin/$t" --gtest_brief=1 "$@" || failed=1
    done
    exit $failed
    ;;
  *)
    echo "run.sh: the mode is asan or tsan, not '$mode'" >&2
    exit 2
    ;;
esac
