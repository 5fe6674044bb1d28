#!/usr/bin/env bash
# `spora synth` end to end (issue 27): it writes a schedule that `spora sim-coll --schedule`
# simulates at the time synth reported, that `spora coll --schedule` runs over threads and over
# 4 MPI ranks with every element right, the cache answers the second run and a corrupted entry
# is searched again; bad arguments stop with an error that says why.
#   synth_cli_test.sh SPORA [MPIRUN]
set -euo pipefail
spora=$1 mpirun=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export SPORA_SYNTH_CACHE="$dir/cache"
fail() { echo "FAIL: $*"; exit 1; }
json() {  # FILE PYTHON-EXPRESSION on d: prints its value
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# A 4x4 torus: the schedule found is a composition, faster than the best built-in.
"$spora" synth --cluster tests/sim/data/torus-4x4.yaml --sizes 1M -o "$dir/ar.sched" --json \
  > "$dir/synth.json"
schedule=$(json "$dir/synth.json" "d['results'][0]['schedule']")
case $schedule in composed*) ;; *) fail "torus all-reduce: not a composition: $schedule" ;; esac
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; assert r['time_us'] < r['builtin_time_us'], r" \
  "$dir/synth.json" || fail "no faster than the built-in"
grep -q "^# schedule: $schedule\$" "$dir/ar.sched" || fail "the file does not say what it holds"
grep -q '^# proven by the symbolic checker' "$dir/ar.sched" || fail "the file does not say how it was proven"

# sim-coll --schedule simulates it at the time synth reported.
"$spora" sim-coll --cluster tests/sim/data/torus-4x4.yaml --schedule "$dir/ar.sched" --json > "$dir/sim.json"
python3 - "$dir/synth.json" "$dir/sim.json" <<'EOF' || fail "sim-coll --schedule disagrees with synth"
import json, sys
a = json.load(open(sys.argv[1]))["results"][0]["time_us"]
b = json.load(open(sys.argv[2]))["results"][0]["time_us"]
assert abs(a - b) < 1e-3, (a, b)
EOF

# The second run comes from the cache, with the same schedule.
"$spora" synth --cluster tests/sim/data/torus-4x4.yaml --sizes 1M -o "$dir/again.sched" > "$dir/again.txt"
grep -q 'cached' "$dir/again.txt" || fail "second run not answered by the cache: $(cat "$dir/again.txt")"
diff <(grep -v '^#' "$dir/ar.sched") <(grep -v '^#' "$dir/again.sched") > /dev/null ||
  fail "the cached schedule differs"
# A corrupted entry is searched again (its digest no longer matches).
for entry in "$SPORA_SYNTH_CACHE"/*.txt; do echo "ring chunks=1" > "$entry"; done
"$spora" synth --cluster tests/sim/data/torus-4x4.yaml --sizes 1M > "$dir/third.txt"
grep -q 'cached' "$dir/third.txt" && fail "a corrupted cache entry was used"
[ "$(stat -c %a "$SPORA_SYNTH_CACHE")" = 700 ] || fail "the cache directory is not private"

# spora sim --algo synth: the training step's all-reduce synthesized (cached), faster than the
# ring's step on two meshes of 4.
for algo in ring synth; do
  "$spora" sim tests/sim/data/tiny_mlp.sp --cluster tests/sim/data/mesh-2x4.yaml --batch 64 \
    --algo $algo --json > "$dir/step_$algo.json"
done
python3 - "$dir/step_ring.json" "$dir/step_synth.json" <<'EOF' || fail "spora sim --algo synth"
import json, sys
ring, synth = (json.load(open(f)) for f in sys.argv[1:3])
assert synth["algorithm"] == "synth", synth["algorithm"]
assert synth["step_seconds"] < ring["step_seconds"], (synth["step_seconds"], ring["step_seconds"])
EOF

# --collectives synth: a strategy's collectives priced by synthesized schedules for their
# groups. Data parallelism over a 4x4 torus: its all-reduces over 16 chips take the torus'
# composed schedule, and the step is faster than under the ring model, in spora sim and in
# spora search --evaluate.
printf '{"mesh": [16], "layouts": {"x": "(16, 1)", "y": "(16)"}}\n' > "$dir/dp16.json"
step_of() { sed -n 's/^step time *\([0-9.]*\) ms$/\1/p' "$1"; }
for c in ring synth; do
  "$spora" sim benchmarks/sim/w2_mlp.sp --cluster tests/sim/data/torus-4x4.yaml --batch 256 \
    --strategy "$dir/dp16.json" --collectives $c --synth-time-limit 5 > "$dir/spmd_$c.txt"
  "$spora" search benchmarks/sim/w2_mlp.sp --cluster tests/sim/data/torus-4x4.yaml --mesh 16 \
    --batch 256 --evaluate "$dir/dp16.json" --collectives $c --synth-time-limit 5 |
    sed -n 3p | awk '{print $3 " " $4}' > "$dir/search_$c.txt"
done
python3 - "$(step_of "$dir/spmd_ring.txt")" "$(step_of "$dir/spmd_synth.txt")" <<'EOF' || fail "spora sim --collectives synth: $(cat "$dir/spmd_synth.txt")"
import sys
ring, synth = float(sys.argv[1]), float(sys.argv[2])
assert synth < ring / 2, (synth, ring)
EOF
python3 - "$(cat "$dir/search_ring.txt")" "$(cat "$dir/search_synth.txt")" <<'EOF' || fail "spora search --collectives synth"
import sys
scale = {"s": 1, "ms": 1e-3, "us": 1e-6}
ring, synth = (float(a.split()[0]) * scale[a.split()[1]] for a in sys.argv[1:3])
assert synth < ring / 2, (synth, ring)
EOF
if "$spora" sim benchmarks/sim/w2_mlp.sp --cluster tests/sim/data/torus-4x4.yaml --batch 256 \
  --collectives synth > /dev/null 2> "$dir/err.txt"; then fail "--collectives synth with dp accepted"; fi
grep -q -- '--algo synth' "$dir/err.txt" || fail "--collectives with dp: $(cat "$dir/err.txt")"

# Real runs: SCHEDULE over threads and over RANKS MPI ranks, every element checked.
runs_right() {  # NAME SCHEDULE RANKS
  "$spora" coll --schedule "$2" --backend threads > "$dir/threads.txt"
  grep -q '^# Wrong elements *: 0 OK' "$dir/threads.txt" || fail "$1 over threads: $(cat "$dir/threads.txt")"
  if [ -n "$mpirun" ]; then
    "$mpirun" --oversubscribe --allow-run-as-root -np "$3" "$spora" coll --schedule "$2" --backend mpi \
      > "$dir/mpi.txt"
    grep -q '^# Wrong elements *: 0 OK' "$dir/mpi.txt" || fail "$1 over MPI: $(cat "$dir/mpi.txt")"
  fi
}

# Every collective synthesized for 4 ranks.
for op in all-reduce reduce-scatter all-gather; do
  "$spora" synth --cluster tests/sim/data/tiny-2x2-nics.yaml --op $op --sizes 4K --no-cache \
    -o "$dir/$op.sched" > /dev/null
  runs_right "$op" "$dir/$op.sched" 4
done

# A composed all-to-all (two meshes of 4: dimension-wise exchanges), over 8 ranks.
"$spora" synth --cluster tests/sim/data/mesh-2x4.yaml --op all-to-all --sizes 64K --no-cache \
  -o "$dir/all-to-all.sched" > /dev/null
grep -q '^# schedule: composed dims' "$dir/all-to-all.sched" ||
  fail "all-to-all not composed: $(head -3 "$dir/all-to-all.sched")"
runs_right all-to-all "$dir/all-to-all.sched" 8

# Errors say why.
refused() {
  local expected=$1
  shift
  if "$spora" synth "$@" > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$* was accepted"; fi
  grep -qF -- "$expected" "$dir/err.txt" || fail "$*: expected '$expected', got: $(cat "$dir/err.txt")"
}
refused "--cluster is required" --sizes 1M
refused "unknown --op 'all-sum'" --cluster tests/sim/data/torus-4x4.yaml --op all-sum
refused "--ranks 17 but torus-4x4 has 16 devices" --cluster tests/sim/data/torus-4x4.yaml --ranks 17
refused "--time-limit 0 must be positive" --cluster tests/sim/data/torus-4x4.yaml --time-limit 0
# sim-coll --schedule refuses a wrong schedule with the checker's reason.
if "$spora" sim-coll --cluster tests/sim/data/torus-4x4.yaml --schedule tests/collectives/bad/double_count.sched \
  > "$dir/out.txt" 2> "$dir/err.txt"; then fail "sim-coll simulated a wrong schedule"; fi
grep -q 'the schedule is wrong' "$dir/err.txt" || fail "sim-coll --schedule: $(cat "$dir/err.txt")"
echo "synth CLI: OK"
