#!/bin/sh
# A rank killed mid-run: `spora run forever.sp --ranks 2` must end on every rank within 10 s of
# the kill, exit non-zero, and name the dead rank once.
#   kill_test.sh SPORA PROG
set -u
spora=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$spora" run "$prog" --ranks 2 > "$dir/out" 2> "$dir/err" &
launcher=$!
# Wait until the ranks run (the first epoch is printed).
for _ in $(seq 1 600); do grep -q "^epoch" "$dir/out" && break; sleep 0.1; done
grep -q "^epoch" "$dir/out" || { echo "the run never started"; cat "$dir/err"; kill $launcher; exit 1; }
victim=""
for p in $(pgrep -f "spora run $prog"); do
  if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$p; fi
done
[ -n "$victim" ] || { echo "no rank 1 process found"; kill $launcher; exit 1; }
start=$(date +%s.%N)
kill -9 "$victim"
wait $launcher
rc=$?
end=$(date +%s.%N)
cat "$dir/err"
elapsed=$(python3 -c "print(round($end - $start, 2))")
echo "exit status $rc, $elapsed s after the kill"
survivors=$(pgrep -f "spora run $prog" | wc -l)
[ "$rc" -ne 0 ] || { echo "FAIL: exit status 0"; exit 1; }
python3 -c "import sys; sys.exit(0 if $elapsed < 10 else 1)" || { echo "FAIL: took $elapsed s"; exit 1; }
[ "$survivors" -eq 0 ] || { echo "FAIL: $survivors rank processes still running"; exit 1; }
n=$(grep -c "rank 1" "$dir/err")
[ "$n" -eq 1 ] || { echo "FAIL: the dead rank is named $n times"; exit 1; }
echo "every rank ended"
