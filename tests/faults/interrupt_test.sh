#!/bin/sh
# SIGINT and SIGTERM mid-training: a program saves a 4 MB checkpoint every step; it is stopped
# (twice with each signal), each time while a checkpoint is being written (SPORA_TEST_SLOW_WRITES
# pauses every write for 300 ms half-way, files.h; the test signals once it sees the temporary
# file). The run must end within 5 s with the shell's status for the signal (130 / 143: no core
# dump), print one line "spora: interrupted by SIGINT" (or SIGTERM), leave no temporary file,
# and the checkpoint must load and hold exactly what the program last saved completely.
#   interrupt_test.sh SPORA
set -u
spora=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/train.sp" <<'SP'
model Lin {
    param w: f32[1024, 1024] = normal(0.0, 0.01)
}
def loss(net: Lin, x) = mean((x @ net.w - 1.0) * (x @ net.w - 1.0))
def main() {
    var net = Lin(seed=0)
    let x = normal(0.0, 1.0, shape=(8, 1024), seed=1)
    for step in range(1000000) {
        let (l, g) = value_and_grad(loss)(net, x)
        net = tree_map(fn (p, d) => p - 0.1 * d, net, g)
        print("saving", step + 1, sum(net.w), sum(net.w * net.w))
        save((net, cast(step + 1, f32)), "ck.ckpt")
        print("saved", step + 1)
    }
}
SP
cat > "$dir/check.sp" <<'SP'
model Lin {
    param w: f32[1024, 1024] = normal(0.0, 0.01)
}
def main() {
    let (net, step) = load("ck.ckpt", like=(Lin(seed=7), 0.0))
    print("saving", cast(step, i32), sum(net.w), sum(net.w * net.w))
}
SP
failures=0
mid_write=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for sig in INT TERM INT TERM; do
  run="$dir/run_${sig}_$(date +%s%N)"
  mkdir "$run"
  cd "$run" || exit 1
  # (A background job of a script starts with SIGINT ignored, which spora keeps, as nohup
  # expects: env gives it the default back.)
  SPORA_TEST_SLOW_WRITES=300 env --default-signal=INT "$spora" run "$dir/train.sp" > out 2> err &
  pid=$!
  # Two checkpoints done, then wait (at most ~2 s) until the next one is being written. (The
  # background job may not have opened `out` yet: no file counts as none saved.)
  n=0
  saved() { c=$(grep -c '^saved' out 2> /dev/null); echo "${c:-0}"; }
  while [ "$(saved)" -lt 2 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ $n -lt 300 ] || { fail "SIG$sig: the program saved nothing in 30 s"; cat err; kill -9 $pid; continue; }
  n=0
  while [ $n -lt 20000 ]; do
    for f in .ck.ckpt.tmp.*; do [ -e "$f" ] && n=20000; done
    n=$((n + 1))
  done
  kill -s "$sig" $pid
  start=$(date +%s%N)
  n=0
  while kill -0 $pid 2> /dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  kill -0 $pid 2> /dev/null && { fail "SIG$sig: still running 10 s after the signal"; kill -9 $pid; }
  wait $pid
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  case $sig in INT) want=130 ;; TERM) want=143 ;; esac
  [ "$rc" -eq "$want" ] || fail "SIG$sig: exit status $rc, not $want"
  [ "$ms" -lt 5000 ] || fail "SIG$sig: ended $ms ms after the signal"
  [ "$(wc -l < err)" -eq 1 ] && grep -q "^spora: interrupted by SIG$sig" err ||
    { fail "SIG$sig: stderr is not one line 'spora: interrupted by SIG$sig':"; cat err; }
  grep -q "while writing 'ck.ckpt'; it keeps its previous contents" err && mid_write=$((mid_write + 1))
  left=$(ls -A | tr '\n' ' ')
  [ "$left" = "ck.ckpt err out " ] || fail "SIG$sig: the directory holds $left"
  "$spora" run "$dir/check.sp" > loaded 2> load_err || { fail "SIG$sig: the checkpoint does not load"; cat load_err; }
  # The checkpoint is the last save that completed: the last 'saved' step, or the one after it
  # when the signal came between its rename and its 'saved' line.
  last=$(grep '^saved' out | tail -1 | cut -d' ' -f2)
  if grep -qx "$(grep "^saving $last " out)" loaded; then
    echo "ok: SIG$sig after step $last (status $rc in $ms ms): $(cat err)"
  elif grep -qx "$(grep "^saving $((last + 1)) " out)" loaded; then
    echo "ok: SIG$sig after step $((last + 1)) was renamed (status $rc in $ms ms): $(cat err)"
  else
    fail "SIG$sig: the checkpoint holds '$(cat loaded)', the program saved step $last as '$(grep "^saving $last " out)'"
  fi
  cd "$dir" || exit 1
done
echo "$mid_write of 4 signals came while a checkpoint was being written"
[ "$mid_write" -ge 3 ] || fail "only $mid_write signals came during a write"
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "every run ended cleanly with its last checkpoint intact"
