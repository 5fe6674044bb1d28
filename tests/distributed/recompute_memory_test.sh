#!/bin/sh
# Recomputation under the distributed runtime (deep_mlp_recompute.sp on 2 ranks): with
# `--recompute all` it must print the same, and rank 0's measured peak tensor memory must drop by
# at least 1 MB (half of one 2048x256 f32 activation; each block then keeps only its input).
# Without fusion (--no-fuse): a fused group's outputs live in the long-lived pool, which hides
# the saving (backends/distributed/README.md).
#   recompute_memory_test.sh SPORA PROG
set -eu
spora=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$spora" run "$prog" --ranks 2 --no-fuse --stats > a.txt 2> a.err || { cat a.err; exit 1; }
"$spora" run "$prog" --ranks 2 --no-fuse --stats --recompute all > b.txt 2> b.err || { cat b.err; exit 1; }
cmp a.txt b.txt || { echo "FAIL: recomputation changed what the program prints"; exit 1; }
python3 - <<'PY'
import re
peak = [float(re.search(r"measured peak tensor memory ([\d.]+) MB", open(f).read()).group(1))
        for f in ("a.err", "b.err")]
print(f"peak without recomputation {peak[0]:.3f} MB, with {peak[1]:.3f} MB")
assert peak[0] - peak[1] >= 1.0, "recomputation saved less than 1 MB"
PY
