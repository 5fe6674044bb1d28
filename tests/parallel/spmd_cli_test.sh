#!/usr/bin/env bash
# `spora train-step FILE --strategy S --ranks N` (N = 4 unless given) against `spora train-step FILE --ranks 1`:
# the losses of every step and the checksum of the updated parameters agree to a relative
# tolerance.
#   spmd_cli_test.sh SPORA FILE STRATEGY RTOL [RANKS]
set -euo pipefail
spora=$1 file=$2 strategy=$3 rtol=$4 ranks=${5:-4}
ref=$("$spora" train-step "$file" --ranks 1 --steps 3)
got=$("$spora" train-step "$file" --strategy "$strategy" --ranks "$ranks" --steps 3)
echo "$ref"
echo "$got"
pick() { grep -E '^(step [0-9]+ loss|checksum) ' | awk '{print $NF}'; }
paste <(echo "$ref" | pick) <(echo "$got" | pick) | awk -v rtol="$rtol" '
  { n++; d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1;
    if (d > rtol * (s > 1 ? s : 1)) { print "mismatch: " $1 " vs " $2; bad = 1 } }
  END { if (n != 4) { print "expected 3 losses and a checksum, got " n " values"; exit 1 } exit bad }'
