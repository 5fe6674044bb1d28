#!/bin/sh
# `spora run PROG --ranks N [--strategy S | --mesh M]` against `spora run PROG` (one device): the
# user's own program, unchanged, on N MPI ranks. Every line the program prints must match the
# one-device run (numbers within relative tolerance TOL), and with CKPT the checkpoint it saves
# must equal the one-device checkpoint's parameters within CKPT_TOL (checked by COMPARE, a
# program that loads a.ckpt and b.ckpt and prints "maxdiff D"). With --expect RE, the ranks' run
# must also print a line matching RE on stderr (e.g. a --stats line).
#   run_test.sh SPORA PROG TOL N [--expect RE] [--strategy S | --mesh M] [-- CKPT COMPARE CKPT_TOL]
set -eu
spora=$1 prog=$2 tol=$3 ranks=$4
shift 4
args="" expect=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = "--expect" ]; then expect=$2; shift 2; continue; fi
  args="$args $1"; shift
done
ckpt="" compare="" ckpt_tol=""
if [ $# -gt 0 ]; then shift; ckpt=$1 compare=$2 ckpt_tol=$3; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$spora" run "$prog" > one.txt 2> one.err || { cat one.err; exit 1; }
[ -n "$ckpt" ] && mv "$ckpt" a.ckpt
# shellcheck disable=SC2086
"$spora" run "$prog" --ranks "$ranks" $args > many.txt 2> many.err || { cat many.err; exit 1; }
echo "--- one device"; cat one.txt
echo "--- $ranks ranks:$args"; cat many.txt
python3 - "$tol" one.txt many.txt <<'PY'
import re, sys
tol = float(sys.argv[1])
a = open(sys.argv[2]).read().splitlines()
b = open(sys.argv[3]).read().splitlines()
assert len(a) == len(b) and a, f"{len(a)} lines on one device, {len(b)} on the ranks"
num = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")
worst = 0.0
for x, y in zip(a, b):
    assert num.sub("#", x) == num.sub("#", y), f"lines differ: {x!r} / {y!r}"
    for u, v in zip(num.findall(x), num.findall(y)):
        u, v = float(u), float(v)
        err = abs(u - v) / max(abs(u), 1e-3)
        worst = max(worst, err)
        assert err <= tol, f"{u} vs {v} (relative {err:.3g} > {tol}) in {x!r}"
print(f"every line matches (worst relative difference {worst:.3g})")
PY
if [ -n "$expect" ]; then
  grep -E "$expect" many.err || { echo "no line matches '$expect' in the ranks' stderr:"; cat many.err; exit 1; }
fi
if [ -n "$ckpt" ]; then
  mv "$ckpt" b.ckpt
  d=$("$spora" run "$compare" | sed -n 's/^maxdiff //p')
  echo "checkpoint max |difference| $d"
  python3 -c "import sys; d = float('$d'); sys.exit(0 if d <= $ckpt_tol else 1)"
fi
