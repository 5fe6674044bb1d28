#!/usr/bin/env bash
# Every output option of `spora sim` for every kind of run (issue 19, item 8): data
# parallelism (--strategy dp), a strategy file (partitioned step) and a pipeline strategy.
# Each option a kind honours writes what it says (an SVG, a Chrome trace, a log, a profile, a
# JSON object, --trace-ranks limiting the devices); each option it does not honour stops the
# command with exit status 1 and a message naming the option and the reason.
#   sim_outputs_cli_test.sh SPORA KIND        KIND: dp | spmd | pipeline
set -euo pipefail
spora=$1 kind=$2
model=benchmarks/sim/w2_mlp.sp
cluster=examples/clusters/dgx-a100.yaml
case $kind in
  dp) strategy=dp; batch=(--batch 64) ;;
  spmd) strategy=examples/strategies/dp2tp2.json; batch=(--batch 64) ;;
  pipeline) strategy=examples/strategies/pp2.json; batch=() ;;
  *) echo "unknown kind $kind"; exit 2 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { "$spora" sim "$model" --cluster "$cluster" --strategy "$strategy" "${batch[@]}" "$@"; }
fail() { echo "FAIL ($kind): $*"; exit 1; }

# What every kind honours.
run --svg "$dir/t.svg" --trace "$dir/t.json" --trace-ranks 1 > "$dir/report.txt"
# The SVG parses as XML: an <svg> root with drawn elements and text (the lanes and the axis).
python3 - "$dir/t.svg" <<'PY' || fail "--svg is not a well-formed SVG timeline"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
assert len(root.findall(".//" + ns + "rect")) > 1, "no rects"
assert root.findall(".//" + ns + "text"), "no text"
PY
head -c 60 "$dir/t.json" | grep -q 'traceEvents' || fail "--trace wrote no Chrome trace"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/t.json" || fail "--trace: not JSON"
# --trace-ranks 1: one device (or stage) in the trace: only pid 0.
if grep -q '"pid": *[1-9]' "$dir/t.json"; then fail "--trace-ranks 1 left other devices in the trace"; fi
[ -s "$dir/report.txt" ] || fail "no report"
run --json > "$dir/out.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['step_seconds'] > 0" \
  "$dir/out.json" || fail "--json is not a JSON object with step_seconds"

# stdout carries the report or the JSON: no other output may share it with them.
for args in "--svg -" "--trace -" "--log - --json"; do
  # shellcheck disable=SC2086
  if run $args > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$args was accepted"; fi
  grep -q "stdout" "$dir/err.txt" || fail "$args: $(cat "$dir/err.txt")"
done

# --update fused (the optimizer's update as one kernel per parameter) is honoured by every kind:
# Adam's step is shorter than with its twelve primitives (--update ops, the default), the same
# as the default without --update, and an unknown kernel is refused naming the choices.
step_ms() { run --optimizer adam --json "$@" | python3 -c \
  "import json,sys; print(json.load(sys.stdin)['step_seconds'] * 1e3)"; }
ops=$(step_ms --update ops) default=$(step_ms) fused=$(step_ms --update fused)
[ "$ops" = "$default" ] || fail "--update ops ($ops ms) is not the default ($default ms)"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" \
  "$fused" "$ops" || fail "--update fused ($fused ms) is not faster than ops ($ops ms)"
if run --update bogus > "$dir/out.txt" 2> "$dir/err.txt"; then fail "--update bogus was accepted"; fi
grep -q "ops" "$dir/err.txt" && grep -q "fused" "$dir/err.txt" ||
  fail "--update bogus: $(cat "$dir/err.txt")"

# --profile with --json: the JSON object carries the profile (the same rows the text report
# prints; W2's matmuls take the most time of its primitives), and stdout holds nothing else.
json_profile() {
  run --profile --json > "$dir/out.json"
  python3 - "$dir/out.json" <<'PY' || fail "--profile --json: $(head -c 300 "$dir/out.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["profile"]
by_name = {r["primitive"]: r for r in p["per_primitive"]}
assert by_name["matmul"]["calls"] >= 6, by_name["matmul"]
total = sum(r["seconds"] for r in p["per_primitive"])
assert max(p["per_primitive"], key=lambda r: r["seconds"])["primitive"] == "matmul", by_name
assert abs(sum(r["seconds"] for r in p["per_type"]) - total) <= 1e-9 * max(1.0, total)
secs = [r["seconds"] for r in p["per_type"]]
assert secs == sorted(secs, reverse=True), "per_type is not the most time first"
assert all(r["type"] for r in p["per_type"])
PY
}

# What each kind honours beyond that, and what it refuses.
honoured() {  # FLAG... : runs with them, exit status 0 expected
  run "$@" > "$dir/out.txt" 2> "$dir/err.txt" || fail "$* failed: $(cat "$dir/err.txt")"
}
refused() {  # FLAG [VALUE]: exit status 1 and an error naming the flag
  if run "$@" > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$* was accepted"; fi
  grep -q -- "error: $1 does not apply to" "$dir/err.txt" || fail "$*: $(cat "$dir/err.txt")"
  echo "refused as expected: $(cat "$dir/err.txt")"
}
case $kind in
  dp)
    honoured --log "$dir/log.txt" --log-collectives --profile
    grep -q 'all-reduced' "$dir/log.txt" || fail "--log wrote no all-reduce"
    grep -q '^matmul ' "$dir/out.txt" || fail "--profile printed no matmul"
    json_profile
    honoured --ranks 4 --algo ring --comm-model bulk --recv-reduce staged --bucket-mb 1 \
      --first-bucket-mb 1 --no-bucket-copies --comm-sm-share 0.18
    refused --core-sharing running
    ;;
  spmd)
    honoured --log "$dir/log.txt" --profile --comm-sm-share 0.18
    [ -s "$dir/log.txt" ] || fail "--log wrote nothing"
    grep -q '^matmul ' "$dir/out.txt" || fail "--profile printed no matmul"
    json_profile
    refused --log-collectives
    refused --ranks 4
    refused --algo ring
    refused --comm-model steps
    refused --recv-reduce staged
    refused --bucket-mb 1
    refused --first-bucket-mb 1
    refused --no-bucket-copies
    refused --core-sharing running
    ;;
  pipeline)
    honoured --comm-sm-share 0.18 --core-sharing running
    refused --log "$dir/log.txt"
    refused --log-collectives
    refused --profile
    refused --ranks 4
    refused --algo ring
    refused --comm-model steps
    refused --recv-reduce staged
    refused --bucket-mb 1
    refused --first-bucket-mb 1
    refused --no-bucket-copies
    ;;
esac
echo "PASS ($kind)"
