#!/usr/bin/env bash
# Predicted vs measured for partitioned training steps (issue 9) on this machine's 2 cores, one
# strategy at a time, for one of two models:
#   w2   the W2 MLP (784-512-512-10, f32, SGD), batch 64 (w2_mlp.sp)
#   w4   the W4 Transformer encoder block (d 256, 4 heads, FFN 1024), batch 8 x 128 tokens
#        (w4_block.sp)
#
#   [REPEATS=3] benchmarks/sim/validate_spmd.sh [build/bin/spora] [steps, default 30] [w2 | w4]
#
#   1. spora calibrate --program MODEL   a fresh this-machine spec (one device per core)
#   2. for each strategy (one device; data parallel over 2; Megatron tensor parallel over 2;
#      W2 also tp2_rs: all three layers split, reduce-scatter / all-gather between them, the
#      plan the search picked before collective_overhead was measured; the one
#      `spora search --algo dp` picks for 2 devices, left out of the order when it partitions
#      into the same per-rank program as another strategy):
#        real  spora train-step --strategy S --ranks N --steps K: the partitioned step on N MPI ranks
#              (interpreter, CPU kernels, collectives over MPI), median step after the first;
#              the median of REPEATS such runs, interleaved with the other strategies' runs
#        sim   spora sim --strategy S on the calibrated spec: the same partitioned program
#   3. prints both, the ratio sim / real, and whether the two orders of the strategies agree.
# Measured processes run under `chrt -f 5` (see validate_dp.sh: without it an MPI rendezvous
# stalls for a scheduler period whenever the machine is shared). CHRT= (empty) turns it off.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
spora=${1:-$root/build/bin/spora}
steps=${2:-30}
which=${3:-w2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
chrt=${CHRT-chrt -f 5}
case "$which" in
  w2) model="$here/w2_mlp.sp" batch=64 prefix="" strategies="one dp2 tp2 tp2_rs search" ;;
  w4) model="$here/w4_block.sp" batch=8 prefix="w4_" strategies="one dp2 tp2 search" ;;
  *) echo "validate_spmd.sh: unknown model '$which' (w2 or w4)" >&2; exit 2 ;;
esac

$chrt "$spora" calibrate --out "$tmp/machine.yaml" --program "$model" --batch "$batch" > /dev/null 2>&1
"$spora" search "$model" --cluster "$tmp/machine.yaml" --mesh 2 --algo dp --batch "$batch" \
  --no-simulate -o "$tmp/search.json" > /dev/null
# The real runs are interleaved (one, dp2, tp2, search, one, dp2, ...) REPEATS times (default 3)
# and each strategy's median taken: on a shared machine a slow spell then hits every strategy
# alike instead of one of them.
repeats=${REPEATS:-3}
declare -A file_of ranks_of reals same_as
for s in $strategies; do
  file="$here/strategies/$prefix$s.json"
  [ "$s" = one ] && file="$here/strategies/one.json"
  [ "$s" = search ] && file="$tmp/search.json"
  file_of[$s]=$file
  ranks_of[$s]=$(python3 -c "import json,sys,math; print(math.prod(json.load(open(sys.argv[1]))['mesh']))" "$file")
  [ "${ranks_of[$s]}" = 1 ] || "$spora" ir "$model" --stage partitioned --strategy "$file" --batch "$batch" > "$tmp/$s.ir"
done
# The searched plan may be one of the hand-written ones: then it is not another strategy.
for s in $strategies; do
  if [ "$s" != search ] && [ -f "$tmp/$s.ir" ] && cmp -s "$tmp/$s.ir" "$tmp/search.ir"; then same_as[search]=$s; fi
done
for ((r = 0; r < repeats; r++)); do
  for s in $strategies; do
    [ -n "${same_as[$s]:-}" ] && continue
    real=$($chrt "$spora" train-step "$model" --strategy "${file_of[$s]}" --ranks "${ranks_of[$s]}" --steps "$steps" \
             --batch "$batch" 2>/dev/null | sed -n 's/^median step \([0-9.]*\) ms.*/\1/p')
    reals[$s]="${reals[$s]:-} $real"
  done
done
printf "%-10s %6s %10s %10s %7s  %s\n" strategy ranks real_ms sim_ms sim/real "real runs (ms)"
results=()
for s in $strategies; do
  if [ -n "${same_as[$s]:-}" ]; then
    printf "%-10s %6s   the same per-rank program as %s\n" "$s" "${ranks_of[$s]}" "${same_as[$s]}"
    continue
  fi
  real=$(python3 -c "import statistics,sys; print('%.6f' % statistics.median(float(x) for x in sys.argv[1:]))" ${reals[$s]})
  sim=$("$spora" sim "$model" --cluster "$tmp/machine.yaml" --strategy "${file_of[$s]}" --batch "$batch" --json \
          | python3 -c "import json,sys; print('%.6f' % (json.load(sys.stdin)['step_seconds'] * 1e3))")
  printf "%-10s %6s %10s %10s %7.2f  %s\n" "$s" "${ranks_of[$s]}" "$real" "$sim" \
    "$(python3 -c "print($sim / $real)")" "${reals[$s]# }"
  results+=("$s $real $sim ${reals[$s]# }")
done
# The orders of the medians; then pair by pair: a pair is decided by the real runs when every
# run of one strategy is faster than every run of the other (their ranges do not overlap),
# and the simulator must order every decided pair the same way. Pairs whose runs overlap are
# within the machine's noise: no measurement here orders them.
printf '%s\n' "${results[@]}" | python3 -c "
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
real = [r[0] for r in sorted(rows, key=lambda r: float(r[1]))]
sim = [r[0] for r in sorted(rows, key=lambda r: float(r[2]))]
print('order, real:', ' < '.join(real))
print('order, sim: ', ' < '.join(sim))
print('same order' if real == sim else 'ORDER DIFFERS')
runs = {r[0]: [float(x) for x in r[3:]] for r in rows}
simt = {r[0]: float(r[2]) for r in rows}
decided, agree, ties = 0, 0, []
for i, a in enumerate(rows):
    for b in rows[i + 1:]:
        x, y = a[0], b[0]
        if max(runs[x]) < min(runs[y]) or max(runs[y]) < min(runs[x]):
            decided += 1
            faster = x if max(runs[x]) < min(runs[y]) else y
            slower = y if faster == x else x
            ok = simt[faster] < simt[slower]
            agree += ok
            if not ok: print('  pair decided by the runs, simulated the other way:', faster, '<', slower)
        else:
            ties.append(x + '~' + y)
print(f'pairs decided by the real runs: {decided}, simulated in the same order: {agree}'
      + (f'; within the noise: {\", \".join(ties)}' if ties else ''))
"
