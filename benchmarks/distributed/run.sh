#!/bin/sh
# The full-size distributed run (issue: one program on one device or many): one epoch of the
# Fashion-MNIST MLP (fashion_mlp_1epoch.sp: 938 Adam steps of batch 64, then the test pass) on
# 1 and 2 MPI ranks, interleaved ROUNDS times, and the training-step harness's step on the same
# model (`spora train-step ... --strategy dp`) for the step overhead of running the user's
# program. The program's step is the median time between batches that the progress bar's final
# line gives ("X ms/step"), so MPI start, data decoding, compilation and the test pass are
# outside it, as the harness's median step leaves out its first step; it includes what the
# user's loop does per step (the data pipeline, the program's own Adam and schedule), which is
# the overhead measured. Per round, the ratio of the program's step on 2 ranks to the harness's
# of that round. Writes benchmarks/results/distributed_fashion_mlp.txt (CPU, command, raw times).
#   benchmarks/distributed/run.sh [ROUNDS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
spora=$root/build/bin/spora
prog=$root/benchmarks/distributed/fashion_mlp_1epoch.sp
rounds=${1:-5}
out=$root/benchmarks/results/distributed_fashion_mlp.txt
tmp=$(mktemp)
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$tmp"' EXIT
cpu=$(grep -m1 "model name" /proc/cpuinfo | sed 's/.*: //')
{
  echo "# benchmarks/distributed/run.sh $rounds on $cpu ($(nproc) cores), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# epoch: wall seconds of \`spora run $prog [--ranks 2]\` (compile included), test accuracy;"
  echo "#   step_ms: the median time between batches (the progress bar's final line, X ms/step)"
  echo "# harness: median step of \`spora train-step $prog --strategy dp2.json --ranks 2 --steps 200 --optimizer adam\`"
} > "$tmp"
echo '{"mesh": [2], "axes": ["dp"], "layouts": {"x": "[dp, -]", "y": "[dp]"}}' > "$dir/dp2.json"
for r in $(seq 1 "$rounds"); do
  for ranks in 1 2; do
    start=$(date +%s.%N)
    (cd "$dir" && "$spora" run "$prog" --ranks $ranks > "$dir/out.txt" 2>&1)
    end=$(date +%s.%N)
    acc=$(sed -n 's/^test_acc //p' "$dir/out.txt")
    step=$(tr '\r' '\n' < "$dir/out.txt" | python3 -c "
import re, sys
step = ''
for line in sys.stdin:
    m = re.search(r' ([0-9.]+) (s|ms|us)/step', line)
    if m:
        step = f'{float(m.group(1)) * {\"s\": 1e3, \"ms\": 1, \"us\": 1e-3}[m.group(2)]:.4f}'
print(step)")
    echo "round $r ranks $ranks epoch_s $(python3 -c "print(round($end - $start, 3))") test_acc $acc step_ms $step" >> "$tmp"
  done
  step=$(cd "$dir" && "$spora" train-step "$prog" --strategy "$dir/dp2.json" --ranks 2 --steps 200 --batch 64 \
         --optimizer adam --lr 0.001 | sed -n 's/^median step \([0-9.]*\) ms.*/\1/p')
  echo "round $r harness_step_ms $step" >> "$tmp"
done
python3 - "$tmp" >> "$tmp" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("round")]
for ranks in ("1", "2"):
    t = [float(r[5]) for r in rows if len(r) > 5 and r[3] == ranks and r[4] == "epoch_s"]
    a = [r[7] for r in rows if len(r) > 7 and r[3] == ranks and r[4] == "epoch_s"]
    s = [float(r[9]) for r in rows if len(r) > 9 and r[3] == ranks and r[4] == "epoch_s"]
    print(f"median epoch on {ranks} rank(s): {statistics.median(t):.2f} s wall (accuracy {a[0]}); "
          f"training step {statistics.median(s):.3f} ms (the loop's median step)")
ratios = []
for r in sorted({row[1] for row in rows}):
    prog = [float(x[9]) for x in rows if x[1] == r and x[2] == "ranks" and x[3] == "2" and len(x) > 9]
    harness = [float(x[3]) for x in rows if x[1] == r and x[2] == "harness_step_ms" and len(x) > 3]
    if prog and harness:
        ratios.append(prog[0] / harness[0])
        print(f"round {r}: program step {prog[0]:.3f} ms, harness {harness[0]:.3f} ms, ratio {prog[0] / harness[0]:.3f}")
if ratios:
    print(f"program / harness step on 2 ranks: median {statistics.median(ratios):.3f} over {len(ratios)} rounds "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
mv "$tmp" "$out"
cat "$out"
