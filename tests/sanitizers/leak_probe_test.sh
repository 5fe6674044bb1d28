#!/bin/sh
# The suppressions of the AddressSanitizer suite hide Open MPI's leaks and nothing else:
#   leak_probe_test.sh MPIRUN LEAK_PROBE SUPPRESSIONS KEEP_MPI_PLUGINS_SO
# Under them, a program that leaks 4242 bytes of its own after MPI_Init must fail with that
# leak reported and no Open MPI frame in the report; without them, Open MPI's own leaks are
# reported (so the suppressions are what makes the suite's MPI tests pass).
mpirun="$1" probe="$2" supp="$3" shim="$4"
run() {  # LSAN_OPTIONS
  env ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 LSAN_OPTIONS="$1" LD_PRELOAD="$shim" \
    OMPI_MCA_rmaps_base_oversubscribe=1 "$mpirun" --allow-run-as-root -np 1 "$probe" 2>&1
}
fail() { echo "leak_probe_test: $1" >&2; exit 1; }

out="$(run "suppressions=$supp:print_suppressions=0")" && fail "the leak was not reported (exit 0): $out"
echo "$out" | grep -q "spora_leak_probe_allocation" || fail "no report names the leak: $out"
echo "$out" | grep -q "4242 byte" || fail "the report does not say 4242 bytes: $out"
for lib in libmpi libopen-pal libopen-rte libpmix libhwloc mca_ "unknown module"; do
  echo "$out" | grep -q "$lib" && fail "a leak through $lib was not suppressed: $out"
done
leaks="$(echo "$out" | grep -c "leak of")"
[ "$leaks" -eq 1 ] || fail "expected exactly one leak, LeakSanitizer reported $leaks: $out"

out="$(run "")"
echo "$out" | grep -Eq "libopen-pal|libopen-rte|libmpi|libpmix|mca_" ||
  fail "without the suppressions no Open MPI leak was reported, so they are not needed: $out"
echo "leak_probe_test: the probe's leak reported alone; $(echo "$out" | grep -c "leak of") leaks without the suppressions"
