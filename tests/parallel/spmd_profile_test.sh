#!/usr/bin/env bash
# `spora train-step FILE --strategy S --ranks N --profile P.json`: one merged Chrome trace with a
# process per rank, each holding the step's primitives and its collectives; the per-rank files
# are gone; every rank reports its time in collectives. With a pipeline strategy (KIND
# pipeline): every rank's forward and backward calls of each micro-batch as spans enclosing
# their nodes, and the receives between stages.
#   spmd_profile_test.sh SPORA FILE STRATEGY RANKS [KIND]
set -euo pipefail
spora=$1 file=$2 strategy=$3 ranks=$4 kind=${5:-spmd}
dir=$(mktemp -d "${TMPDIR:-/tmp}/spora_spmd_profile.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$spora" train-step "$file" --strategy "$strategy" --ranks "$ranks" --steps 2 --profile "$dir/p.json" \
  > "$dir/out" 2> "$dir/err" || { cat "$dir/out" "$dir/err"; exit 1; }
cat "$dir/err"
for ((r = 0; r < ranks; r++)); do
  grep -q "^profile: rank $r: .* ms in primitives were collectives or receives" "$dir/err" \
    || { echo "no collective line of rank $r"; exit 1; }
  [ ! -e "$dir/p.rank$r.json" ] || { echo "p.rank$r.json was left behind"; exit 1; }
done
grep -q '^checksum ' "$dir/out" || { echo "no result printed"; exit 1; }
python3 - "$dir/p.json" "$ranks" "$kind" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))["traceEvents"]
ranks, kind = int(sys.argv[2]), sys.argv[3]
names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M"}
assert names == {r: f"rank {r}" for r in range(ranks)}, names
for r in range(ranks):
    ev = [e for e in trace if e.get("ph") == "X" and e["pid"] == r]
    prims = {e["name"] for e in ev}
    assert "matmul" in prims, (r, prims)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in ev)
    if kind == "pipeline":
        spans = [e for e in ev if e["name"].startswith(("forward ", "backward "))]
        assert len(spans) >= 4, (r, len(spans))  # 2 steps, forward and backward
        # Every node of a call lies inside its span, one level deeper.
        for e in ev:
            if e["name"] in ("forward 0", "backward 0") or e["args"]["depth"] != 1:
                continue
            assert any(s["ts"] <= e["ts"] + 1e-3 and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3
                       for s in spans), e
        continue
    coll = [e for e in ev if e["name"] in ("all_reduce", "reduce_scatter", "all_gather")]
    assert len(coll) >= 2, (r, len(coll))  # at least one per step
    # The optimizer's update, a span per parameter and step, names the parameter and the type
    # of this rank's shard of it.
    updates = [e for e in ev if e["name"] == "update"]
    assert len(updates) == 2 * len({e["args"]["param"] for e in updates}), updates
    assert all(e["args"]["param"].startswith("net.") and e["args"]["type"].startswith("f32[")
               for e in updates), updates
if kind == "pipeline":
    recv = [e for e in trace if e.get("ph") == "X" and e["name"] == "recv"]
    assert recv, "no receive between the stages"
print("merged trace:", len(trace), "events over", ranks, "ranks")
PY
