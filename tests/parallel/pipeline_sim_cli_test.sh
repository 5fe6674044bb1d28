#!/usr/bin/env bash
# `spora sim FILE --cluster C --strategy PIPE --json` (a strategy with a "pipeline" key goes
# through sim/pipeline.h): the simulated pipeline phase of M micro-batches over the stages is at
# least M times the slowest stage's forward + backward (the stages' busy time) and less than M
# times the sum over stages (the stages overlap), and the stage count is the strategy's. With
# --optimizer adam every stage keeps two state tensors per parameter (optimizer_state_bytes = 2 x
# parameter_bytes, 0 with sgd) and the peak grows by them.
#   pipeline_sim_cli_test.sh SPORA FILE CLUSTER STRATEGY STAGES MICRO_BATCHES
set -euo pipefail
spora=$1 file=$2 cluster=$3 strategy=$4 stages=$5 m=$6
out=$("$spora" sim "$file" --cluster "$cluster" --strategy "$strategy" --json)
echo "$out"
field() { echo "$out" | grep -o "\"$1\": [-0-9.e+]*" | awk '{print $2}'; }
phase=$(field pipeline_seconds)
fwd=$(field forward | tr '\n' ' ')
bwd=$(field backward | tr '\n' ' ')
awk -v phase="$phase" -v f="$fwd" -v b="$bwd" -v s="$stages" -v m="$m" 'BEGIN {
  n = split(f, F, " "); split(b, B, " ");
  if (n != s) { print "expected " s " stages, got " n; exit 1 }
  mx = 0; sum = 0;
  for (i = 1; i <= n; i++) { t = F[i] + B[i]; sum += t; if (t > mx) mx = t }
  if (phase < m * mx * 0.999) { print "phase " phase " < M x slowest stage " m * mx; exit 1 }
  if (phase >= m * sum) { print "phase " phase " >= M x the sum of the stages " m * sum; exit 1 }
  print "phase " phase " in [" m * mx ", " m * sum ")"
}'
adam=$("$spora" sim "$file" --cluster "$cluster" --strategy "$strategy" --optimizer adam --json)
python3 - "$out" "$adam" <<'PY'
import json, sys
sgd, adam = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k, (a, b) in enumerate(zip(sgd["stages"], adam["stages"])):
    assert a["optimizer_state_bytes"] == 0, a
    assert b["optimizer_state_bytes"] == 2 * b["parameter_bytes"] > 0, b
    assert b["memory_bytes"] == a["memory_bytes"] + b["optimizer_state_bytes"], (a, b)
    print(f"stage {k}: parameters {b['parameter_bytes']:.0f} B, adam state {b['optimizer_state_bytes']:.0f} B")
assert adam["peak_memory"] > sgd["peak_memory"]
PY
