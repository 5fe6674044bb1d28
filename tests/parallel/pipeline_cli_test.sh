#!/usr/bin/env bash
# `spora train-step FILE --strategy PIPE --ranks N` against `spora train-step FILE --ranks 1`: the losses of
# every step and the checksum of the updated parameters agree to a relative tolerance, and
# --verbose has every rank print its stage's schedule.
#   pipeline_cli_test.sh SPORA FILE STRATEGY RANKS RTOL
set -euo pipefail
spora=$1 file=$2 strategy=$3 ranks=$4 rtol=$5
err=$(mktemp "${TMPDIR:-/tmp}/spora_pipeline_cli.XXXXXX")
trap 'rm -f "$err"' EXIT
ref=$("$spora" train-step "$file" --ranks 1 --steps 3)
got=$("$spora" train-step "$file" --strategy "$strategy" --ranks "$ranks" --steps 3 --verbose 2>"$err")
echo "$ref"
echo "$got"
cat "$err"
grep -q "^rank 0: stage 0 of" "$err" || { echo "no --verbose schedule of rank 0"; exit 1; }
grep -q "^rank $((ranks - 1)): stage" "$err" || { echo "no --verbose schedule of the last rank"; exit 1; }
pick() { grep -E '^(step [0-9]+ loss|checksum) ' | awk '{print $NF}'; }
paste <(echo "$ref" | pick) <(echo "$got" | pick) | awk -v rtol="$rtol" '
  { n++; d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1;
    if (d > rtol * (s > 1 ? s : 1)) { print "mismatch: " $1 " vs " $2; bad = 1 } }
  END { if (n != 4) { print "expected 3 losses and a checksum, got " n " values"; exit 1 } exit bad }'
