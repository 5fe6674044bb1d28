#!/bin/sh
# The full-size distributed run (issue: one program on one device or many): one epoch of the
# Fashion-MNIST MLP (fashion_mlp_1epoch.sp: 938 Adam steps of batch 64, then the test pass) on
# 1 and 2 MPI ranks, interleaved ROUNDS times, and the training-step harness's step on the same
# model (`spora train-step ... --strategy dp`) for the step overhead of running the user's
# program. The program's step on 2 ranks is (epoch - short) / 928, where `short` is the same
# program trained on 10 batches (limit=640) with the same start-up and test pass, so MPI start,
# data decoding, compilation and evaluation cancel. Writes
# benchmarks/results/distributed_fashion_mlp.txt (CPU, command, raw times).
#   benchmarks/distributed/run.sh [ROUNDS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
spora=$root/build/bin/spora
prog=$root/benchmarks/distributed/fashion_mlp_1epoch.sp
rounds=${1:-3}
out=$root/benchmarks/results/distributed_fashion_mlp.txt
tmp=$(mktemp)
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$tmp"' EXIT
cpu=$(grep -m1 "model name" /proc/cpuinfo | sed 's/.*: //')
{
  echo "# benchmarks/distributed/run.sh $rounds on $cpu ($(nproc) cores), $(date -u +%FT%TZ)"
  echo "# epoch: wall seconds of \`spora run $prog [--ranks 2]\` (compile included), test accuracy"
  echo "# step: median step of \`spora train-step $prog --strategy $dir/dp2.json --ranks 2 --steps 60\`"
} > "$tmp"
echo '{"mesh": [2], "axes": ["dp"], "layouts": {"x": "[dp, -]", "y": "[dp]"}}' > "$dir/dp2.json"
short=$dir/fashion_mlp_10steps.sp
sed 's/seed=0, flatten=true) {/seed=0, flatten=true, limit=640) {/' "$prog" > "$short"
grep -q "limit=640" "$short" || { echo "run.sh: could not make the 10-step program" >&2; exit 1; }
for r in $(seq 1 "$rounds"); do
  for ranks in 1 2; do
    start=$(date +%s.%N)
    acc=$(cd "$dir" && "$spora" run "$prog" --ranks $ranks | sed -n 's/^test_acc //p')
    end=$(date +%s.%N)
    echo "round $r ranks $ranks epoch_s $(python3 -c "print(round($end - $start, 3))") test_acc $acc" >> "$tmp"
  done
  start=$(date +%s.%N)
  (cd "$dir" && "$spora" run "$short" --ranks 2 > /dev/null)
  end=$(date +%s.%N)
  echo "round $r ranks 2 short_s $(python3 -c "print(round($end - $start, 3))")" >> "$tmp"
  step=$(cd "$dir" && "$spora" train-step "$prog" --strategy "$dir/dp2.json" --ranks 2 --steps 60 --batch 64 \
         --optimizer adam --lr 0.001 | sed -n 's/^median step \([0-9.]*\) ms.*/\1/p')
  echo "round $r harness_step_ms $step" >> "$tmp"
done
python3 - "$tmp" >> "$tmp" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("round")]
for ranks in ("1", "2"):
    t = [float(r[5]) for r in rows if len(r) > 5 and r[3] == ranks and r[4] == "epoch_s"]
    a = [r[7] for r in rows if len(r) > 7 and r[3] == ranks and r[4] == "epoch_s"]
    print(f"median epoch on {ranks} rank(s): {statistics.median(t):.2f} s (accuracy {a[0]}); per step {1e3 * statistics.median(t) / 938:.3f} ms including compile and test pass")
h = [float(r[3]) for r in rows if r[2] == "harness_step_ms" and r[3]]
if h:
    print(f"median harness step on 2 ranks: {statistics.median(h):.3f} ms")
# Per round: the program's step from the full and the 10-step run of that round, over the
# harness step of that round.
ratios, steps = [], []
for r in sorted({row[1] for row in rows}):
    full = [float(x[5]) for x in rows if x[1] == r and x[2] == "ranks" and x[3] == "2" and x[4] == "epoch_s"]
    short = [float(x[5]) for x in rows if x[1] == r and x[4:5] == ["short_s"]]
    harness = [float(x[3]) for x in rows if x[1] == r and x[2] == "harness_step_ms" and x[3]]
    if full and short and harness:
        step = 1e3 * (full[0] - short[0]) / 928
        steps.append(step)
        ratios.append(step / harness[0])
        print(f"round {r}: program step {step:.3f} ms, harness {harness[0]:.3f} ms, ratio {step / harness[0]:.3f}")
if ratios:
    print(f"median program step on 2 ranks: {statistics.median(steps):.3f} ms; "
          f"program / harness step: median {statistics.median(ratios):.3f} over {len(ratios)} rounds")
PY
mv "$tmp" "$out"
cat "$out"
