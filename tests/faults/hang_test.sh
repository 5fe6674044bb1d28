#!/bin/sh
# A rank that hangs: `spora run forever.sp --ranks 2 --collective-timeout 3`, then rank 1 is
# stopped (SIGSTOP: it neither computes nor answers, and does not die). Rank 0 waits 3 s in its
# next collective, then every rank must end within 10 s of that timeout, with a non-zero status,
# no process left (the stopped one included), and one line naming rank 1:
#   spora: rank 1 did not arrive at a collective within 3 s (SPORA_COLLECTIVE_TIMEOUT; ...)
#   hang_test.sh SPORA PROGRAM
set -u
spora=$1 prog=$2
timeout=3
dir=$(mktemp -d)
launcher=""
victim=""
cleanup() {
  [ -n "$victim" ] && kill -9 "$victim" 2> /dev/null
  [ -n "$launcher" ] && kill "$launcher" 2> /dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
"$spora" run "$prog" --ranks 2 --collective-timeout $timeout > "$dir/out" 2> "$dir/err" &
launcher=$!
# The ranks run (two epochs, so collectives have completed under the timeout).
for _ in $(seq 1 600); do [ "$(grep -c '^epoch' "$dir/out")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -c '^epoch' "$dir/out")" -ge 2 ] || { echo "FAIL: the run never started"; cat "$dir/err"; exit 1; }
for p in $(pgrep -f "spora run $prog"); do
  if tr '\0' '\n' < /proc/$p/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$p; fi
done
[ -n "$victim" ] || { echo "FAIL: no rank 1 process found"; exit 1; }
start=$(date +%s%N)
kill -STOP "$victim"
# Never hang here: after timeout + 20 s the test gives up and cleans up.
n=0
while kill -0 "$launcher" 2> /dev/null && [ $n -lt $((10 * (timeout + 20))) ]; do sleep 0.1; n=$((n + 1)); done
kill -0 "$launcher" 2> /dev/null && { echo "FAIL: still running $((timeout + 20)) s after the stop"; cat "$dir/err"; exit 1; }
wait "$launcher"
rc=$?
launcher=""
ms=$((($(date +%s%N) - start) / 1000000))
cat "$dir/err"
echo "exit status $rc, $ms ms after rank 1 stopped (timeout $timeout s)"
failures=0
[ "$rc" -ne 0 ] || { echo "FAIL: exit status 0"; failures=1; }
[ "$ms" -lt $(((timeout + 10) * 1000)) ] || { echo "FAIL: not within 10 s of the timeout"; failures=1; }
left=$(pgrep -f "spora run $prog" | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left rank processes still running"; failures=1; }
state=$(ps -o stat= -p "$victim")
case "$state" in "" | Z*) ;; *) echo "FAIL: the stopped rank is still there (state $state)"; failures=1 ;; esac
n=$(grep -c "rank 1" "$dir/err")
[ "$n" -eq 1 ] || { echo "FAIL: rank 1 is named $n times"; failures=1; }
grep -q "^spora: rank 1 did not arrive at a collective within $timeout s" "$dir/err" ||
  { echo "FAIL: no line 'spora: rank 1 did not arrive at a collective within $timeout s'"; failures=1; }
[ "$failures" -eq 0 ] || exit 1
echo "every rank ended"
