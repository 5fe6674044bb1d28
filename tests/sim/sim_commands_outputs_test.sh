#!/usr/bin/env bash
# Every output option of `spora sim-coll`, `spora sim-gpt` and `spora search` (issue 19, item
# 8; `spora sim` is sim_outputs_cli_test.sh): each option either writes what it says, well
# formed, or stops the command with exit status 1 and an error that names it and says why.
#   sim_commands_outputs_test.sh SPORA COMMAND        COMMAND: sim-coll | sim-gpt | search
set -euo pipefail
spora=$1 command=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($command): $*"; exit 1; }
# refused EXPECTED-TEXT ARGS...: exit status 1, nothing on stdout, one error line with the text.
refused() {
  local expected=$1
  shift
  if "$spora" "$@" > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$* was accepted"; fi
  grep -qF -- "$expected" "$dir/err.txt" || fail "$*: expected '$expected', got: $(cat "$dir/err.txt")"
  [ ! -s "$dir/out.txt" ] || fail "$*: wrote to stdout before failing: $(head -c 200 "$dir/out.txt")"
  echo "refused as expected: $(cat "$dir/err.txt")"
}
json_check() {  # FILE PYTHON-ASSERTION on d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1" || fail "$1: not as expected: $2"
}

case $command in
  sim-coll)
    cluster=examples/clusters/dgx-a100.yaml
    coll() { "$spora" sim-coll --cluster "$cluster" --sizes 1K:4K "$@"; }
    coll --json --log "$dir/log.txt" > "$dir/out.json"
    json_check "$dir/out.json" "assert len(d['results']) == 3 and all(r['time_us'] > 0 for r in d['results'])"
    grep -q '^# size 1024 B' "$dir/log.txt" || fail "--log: no size header"
    grep -q 'rank0@node0-gpu0: ' "$dir/log.txt" || fail "--log: no step of rank 0"
    # Every algorithm writes its log, for an operation it implements.
    for algo_op in ring:all-gather ring:reduce-scatter tree:broadcast hierarchical:all-reduce \
                   halving-doubling:all-reduce binomial:reduce; do
      coll --algo "${algo_op%%:*}" --op "${algo_op#*:}" --log "$dir/a.log" --json > "$dir/a.json"
      json_check "$dir/a.json" "assert d['results'][0]['time_us'] > 0"
      grep -q 'rank' "$dir/a.log" || fail "--log with $algo_op wrote no step"
    done
    coll --log - > "$dir/mixed.txt"
    grep -q '^# spora sim-coll' "$dir/mixed.txt" || fail "--log -: no table"
    grep -q 'rank0@node0-gpu0: ' "$dir/mixed.txt" || fail "--log -: no log on stdout"
    refused "--log - and --json both write to stdout" sim-coll --cluster "$cluster" --sizes 1K --log - --json
    refused "cannot write the log to '$dir/none/x.log'" sim-coll --cluster "$cluster" --sizes 1K --log "$dir/none/x.log"
    refused "--algo tree does not implement all-gather" sim-coll --cluster "$cluster" --sizes 1K --algo tree --op all-gather --json
    ;;
  sim-gpt)
    cluster=benchmarks/sim/gpt/dgx-a100-64.yaml
    gpt=(sim-gpt --cluster "$cluster" --gpus 8 --hidden 1024 --layers 4 --heads 16 --batch 8 --tp 8)
    "$spora" "${gpt[@]}" --json > "$dir/out.json"
    json_check "$dir/out.json" "assert d['step_seconds'] > 0 and d['tflops_per_gpu'] > 0 and d['memory_per_gpu_bytes'] > 0 and d['fits'] is True and d['candidates']"
    "$spora" "${gpt[@]}" > "$dir/report.txt"
    grep -q '^step ' "$dir/report.txt" || fail "report without the step"
    # A configuration that does not fit: the JSON is still written, the error says by how much.
    big=(sim-gpt --cluster "$cluster" --gpus 8 --tp 8 --hidden 8192 --layers 48 --heads 64 --batch 8 --micro-batch 1 --json)
    if "$spora" "${big[@]}" > "$dir/big.json" 2> "$dir/err.txt"; then fail "39B on 8 GPUs fitted"; fi
    json_check "$dir/big.json" "assert d['fits'] is False"
    grep -q 'GB over the 80.00 GB of a GPU' "$dir/err.txt" || fail "no by-how-much: $(cat "$dir/err.txt")"
    # It writes no file: a file option is an error that names it.
    for opt in --svg --trace --log; do
      if "$spora" "${gpt[@]}" "$opt" "$dir/x" > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$opt accepted"; fi
      grep -qF -- "$opt" "$dir/err.txt" || fail "$opt: the error does not name it: $(cat "$dir/err.txt")"
      [ ! -e "$dir/x" ] || fail "$opt wrote a file"
    done
    ;;
  search)
    cluster=examples/clusters/dgx-a100.yaml
    model=benchmarks/sim/w2_mlp.sp
    for algo in dp rec propagate; do
      "$spora" search "$model" --cluster "$cluster" --mesh 2x2 --batch 64 --algo "$algo" \
        --no-simulate -o "$dir/$algo.json" > "$dir/out.txt"
      json_check "$dir/$algo.json" "assert d['mesh'] and d['layouts']"
      grep -q "$dir/$algo.json" "$dir/out.txt" || fail "--algo $algo: no 'wrote' line"
    done
    refused "--output does not apply to --evaluate" search "$model" --cluster "$cluster" --mesh 2x2 \
      --batch 64 --evaluate "$dir/dp.json" -o "$dir/e.json"
    [ ! -e "$dir/e.json" ] || fail "--evaluate wrote -o"
    refused "--explain does not apply to --algo rec" search "$model" --cluster "$cluster" --mesh 2x2 \
      --batch 64 --algo rec --explain
    ;;
  *) echo "unknown command $command"; exit 2 ;;
esac
echo "PASS ($command)"
