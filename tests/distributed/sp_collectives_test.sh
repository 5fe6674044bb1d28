#!/bin/sh
# Sequence parallelism on W4 (w4_block_train.sp, 4 Adam steps, 2 ranks): with "sequence_parallel"
# the row-parallel outputs are reduce-scattered onto the sequence instead of all-reduced (2 in
# the forward pass, 1 in the backward: the first block's input needs no gradient, so 3 per step),
# the column-parallel inputs are gathered back, and what is still all-reduced is small (layer
# norm and bias gradients, the loss): under a tenth of tensor parallelism's all-reduced bytes.
#   sp_collectives_test.sh SPORA PROG TP_STRATEGY SP_STRATEGY
set -eu
spora=$1 prog=$2 tp=$3 sp=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$spora" run "$prog" --ranks 2 --strategy "$tp" --stats > tp.txt 2> tp.err || { cat tp.err; exit 1; }
"$spora" run "$prog" --ranks 2 --strategy "$sp" --stats > sp.txt 2> sp.err || { cat sp.err; exit 1; }
grep "collectives:" tp.err sp.err
python3 - <<'PY'
import re
def kinds(f):
    line = [l for l in open(f) if l.startswith("stats: collectives:")][0]
    return {k: (int(n), float(mb)) for k, n, mb in re.findall(r"(\w+) (\d+) \(([\d.]+) MB\)", line)}
tp, sp = kinds("tp.err"), kinds("sp.err")
assert "reduce_scatter" not in tp, tp
assert tp["all_reduce"][0] >= 12, tp
assert sp["reduce_scatter"][0] == 12, sp
assert sp["all_gather"][0] >= 16, sp
assert sp["all_reduce"][1] < 0.1 * tp["all_reduce"][1], (sp, tp)
print("sequence parallelism reduce-scatters and gathers where tensor parallelism all-reduces")
PY
