#!/bin/sh
# Determinism: determinism.sp (fixed seeds; Adam on shuffled Fashion-MNIST, an evaluation, fused
# whole-tensor sums) prints bit-identical lines across runs, and with 1, 2 and 3 OpenMP threads
# (SPORA_CPU_LOAD_ADAPTIVE=0, so that a busy machine does not run every loop on one thread):
# results do not depend on the thread count (backends/cpu/README.md, backends/codegen/README.md).
# Graph mode, fused (the default) and --no-fuse.
#   determinism_test.sh SPORA PROGRAM
set -u
spora=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "SKIP: dataset-fashion-mnist is not installed"; exit 77; }
failures=0
run() {  # run NAME THREADS [FLAGS...]
  name=$1 threads=$2
  shift 2
  OMP_NUM_THREADS=$threads SPORA_CPU_LOAD_ADAPTIVE=0 "$spora" run "$prog" "$@" > "$dir/$name" 2> "$dir/$name.err" ||
    { echo "FAIL: $name: the run failed"; cat "$dir/$name.err"; failures=$((failures + 1)); }
}
same() {  # same A B: the two outputs are identical
  if cmp -s "$dir/$1" "$dir/$2"; then
    echo "ok: $1 = $2 ($(wc -l < "$dir/$1") lines)"
  else
    echo "FAIL: $1 and $2 differ:"
    diff "$dir/$1" "$dir/$2" | head -10
    failures=$((failures + 1))
  fi
}
run fused_a 2
run fused_b 2
run fused_1 1
run fused_3 3
run nofuse_1 1 --no-fuse
run nofuse_2 2 --no-fuse
same fused_a fused_b
same fused_a fused_1
same fused_a fused_3
same nofuse_1 nofuse_2
grep -q "^f64 sums" "$dir/fused_a" || { echo "FAIL: the program printed no sums"; failures=$((failures + 1)); }
head -3 "$dir/fused_a"
tail -2 "$dir/fused_a"
[ "$failures" -eq 0 ] || exit 1
echo "bit-identical across runs and thread counts"
