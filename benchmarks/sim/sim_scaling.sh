#!/usr/bin/env bash
# How long `spora sim` takes to simulate one data-parallel step of the 48-layer Transformer
# (benchmarks/sim/transformer48.sp, 616 M parameters, 73 gradient buckets) on 8 to 1,024
# A100 GPUs: DGX A100 nodes of 8 on a non-blocking two-level fat tree, one sample per GPU.
#
#   benchmarks/sim/sim_scaling.sh [build/bin/spora] [max devices]
#
# Prints, per device count: the communication model `auto` chose (steps up to 64 ranks, bulk
# beyond), the simulated step time, the SimGrid activities started ("events"), the wall and CPU
# time of the simulation itself, the wall time of the whole command (which also compiles and
# differentiates the model), and events per wall and per CPU second (this machine is shared:
# the CPU time is the steadier figure). Set MODELS="steps bulk" to run both models where steps
# is feasible.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
spora=${1:-$root/build/bin/spora}
max=${2:-1024}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

spec() {  # spec DEVICES -> path of a cluster of DEVICES/8 DGX A100 nodes
  local devices=$1 nodes=$(( $1 / 8 ))
  if (( nodes == 1 )); then echo "$root/examples/clusters/dgx-a100.yaml"; return; fi
  local leaf=$(( nodes < 16 ? nodes : 16 ))
  sed -e "s/^name: .*/name: dgx-a100-x$nodes/" -e "s/^nodes: .*/nodes: $nodes/" \
      -e "s/down: \[8, 4\]/down: [$leaf, $(( nodes / leaf ))]/" \
      "$root/examples/clusters/dgx-a100-cluster-32.yaml" > "$tmp/c$devices.yaml"
  echo "$tmp/c$devices.yaml"
}

printf "%8s %6s %10s %9s %8s %8s %8s %12s %12s\n" devices model step_ms events sim_wall sim_cpu total_s events/s events/cpu_s
for devices in 8 16 32 64 128 256 512 1024; do
  (( devices > max )) && break
  for model in ${MODELS:-auto}; do
    [[ $model == steps && $devices -gt 64 ]] && continue
    start=$(date +%s.%N)
    json=$("$spora" sim "$here/transformer48.sp" --cluster "$(spec $devices)" --batch $devices \
             --comm-model $model --json)
    end=$(date +%s.%N)
    python3 - "$devices" "$start" "$end" <<PY
import json, sys
r = json.loads('''$json''')
devices, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
print("%8s %6s %10.3f %9d %8.2f %8.2f %8.2f %12.0f %12.0f" % (devices, r["comm_model"],
      r["step_seconds"] * 1e3, r["events"], r["wall_seconds"], r["cpu_seconds"], end - start,
      r["events"] / r["wall_seconds"], r["events"] / max(r["cpu_seconds"], 1e-9)))
PY
  done
done
