#!/bin/sh
# Train on N ranks, save, load on 1 rank and continue: the result equals an uninterrupted
# one-device run (ckpt_full.sp vs ckpt_part1.sp on N ranks then ckpt_part2.sp on 1), within
# 1e-10 (compare_ckpt.sp).
#   ckpt_test.sh SPORA DIR N STRATEGY
set -eu
spora=$1 src=$2 ranks=$3 strategy=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$spora" run "$src/ckpt_full.sp"
"$spora" run "$src/ckpt_part1.sp" --ranks "$ranks" --strategy "$strategy"
"$spora" run "$src/ckpt_part2.sp"
d=$("$spora" run "$src/compare_ckpt.sp" | sed -n 's/^maxdiff //p')
echo "resumed vs uninterrupted: max |difference| $d"
python3 -c "import sys; sys.exit(0 if float('$d') <= 1e-10 else 1)"
