#!/bin/sh
# A full disk while Spora writes: save(...) (a checkpoint), save_curves(...), save_npy, save_idx,
# and the command line's outputs (spora search -o, spora sim --trace/--svg, spora ir -o). Each
# is written once on a small tmpfs, the tmpfs is filled, and each is written again with other
# contents: the command must fail with "cannot write 'NAME': No space left on device", the
# previous file must be byte-identical, and no partial or temporary file may be left.
#   disk_full_test.sh SPORA SOURCE_DIR
# Runs in a private mount namespace (unshare) so the tmpfs goes away with it; exits 77 (skipped)
# where a mount namespace or a tmpfs cannot be made (not root, a container without the right).
set -u
spora=$(realpath "$1")
src=$(realpath "$2")
if [ "${SPORA_FAULTS_NS:-}" != 1 ]; then
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "SKIP: cannot make a mount namespace here (unshare --mount needs root or CAP_SYS_ADMIN)"
    exit 77
  fi
  SPORA_FAULTS_NS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi

dir=$(mktemp -d)
fs="$dir/fs"
mkdir "$fs"
cleanup() { cd / && umount "$fs" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=1m tmpfs "$fs" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here"
  exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The program writing every kind of file; VALUE changes the contents, EPOCHS the curves' size.
program() {
  cat > "$dir/$1.sp" <<SP
model Net {
    param w: f32[128, 128] = normal(0.0, 1.0)
}
def main() {
    let net = Net(seed=$2)
    for e in range($3) { log_epoch(e + 1, loss=1.0 / (e + $2)) }
    $4
}
SP
}
program v1_all 1 3 'save(net, "model.ckpt")
    save_curves("run")
    save_npy(net.w, "w.npy")
    save_idx(net.w, "w.idx")'
program v2_ckpt 2 1 'save(net, "model.ckpt")'
program v2_curves 2 2000 'save_curves("run")'
program v2_npy 2 1 'save_npy(net.w, "w.npy")'
program v2_idx 2 1 'save_idx(net.w, "w.idx")'
prog="$src/benchmarks/sim/w2_mlp.sp"
cluster="$src/examples/clusters/dgx-a100.yaml"

cd "$fs" || exit 1
# Once with room: every file exists.
"$spora" run "$dir/v1_all.sp" > /dev/null || { echo "FAIL: the first run failed"; exit 1; }
"$spora" search "$prog" -c "$cluster" --mesh 2 --top 1 -o strategy.json > /dev/null || fail "search -o"
"$spora" sim "$prog" -c "$cluster" --ranks 2 --trace trace.json --svg trace.svg > /dev/null || fail "sim --trace"
"$spora" ir "$prog" -o ir.txt || fail "ir -o"
files="ir.txt model.ckpt run.csv run.svg strategy.json trace.json trace.svg w.idx w.npy"
[ "$(ls -A | tr '\n' ' ')" = "$files " ] || { echo "FAIL: wrote $(ls -A | tr '\n' ' ')"; exit 1; }
mkdir "$dir/before"
cp $files "$dir/before/"

# Fill the tmpfs, then free FREE KiB (0: none).
fill() {
  rm -f .fill
  dd if=/dev/zero of=.fill bs=4096 2>/dev/null
  [ "$1" -gt 0 ] && truncate -s "-$1K" .fill
  sync
}

# expect_full NAME FREE COMMAND...: the command fails naming NAME, and the directory is as before.
expect_full() {
  name=$1 free=$2
  shift 2
  fill "$free"
  "$@" > "$dir/out" 2> "$dir/err"
  rc=$?
  case "$rc" in
    0) fail "$name: exit status 0 on a full disk" ;;
    1) ;;
    *) fail "$name: exit status $rc (1 expected; 128+ is a crash)" ;;
  esac
  grep -q "cannot write '[^']*$name': No space left on device" "$dir/err" ||
    { fail "$name: no 'cannot write '$name': No space left on device' in:"; cat "$dir/err"; }
  [ "$(grep -c . "$dir/err")" -le 4 ] || { fail "$name: more than one error:"; cat "$dir/err"; }
  for f in $files; do cmp -s "$f" "$dir/before/$f" || fail "$name: $f changed"; done
  left=$(ls -A | grep -v '^\.fill$' | tr '\n' ' ')
  [ "$left" = "$files " ] || fail "$name: the directory holds $left"
  echo "ok: $name ($free KiB free): $(grep -m1 "cannot write" "$dir/err")"
}

# 16 KiB free: the 64 KiB files fail part-way; 0 KiB: at the first byte.
expect_full model.ckpt 16 "$spora" run "$dir/v2_ckpt.sp"
expect_full model.ckpt 0 "$spora" run "$dir/v2_ckpt.sp"
expect_full run.csv 0 "$spora" run "$dir/v2_curves.sp"
expect_full run.svg 40 "$spora" run "$dir/v2_curves.sp"
expect_full w.npy 16 "$spora" run "$dir/v2_npy.sp"
expect_full w.idx 16 "$spora" run "$dir/v2_idx.sp"
expect_full strategy.json 0 "$spora" search "$prog" -c "$cluster" --mesh 4 --top 1 -o strategy.json
expect_full trace.json 4 "$spora" sim "$prog" -c "$cluster" --ranks 4 --trace trace.json --svg trace.svg
expect_full trace.svg 0 "$spora" sim "$prog" -c "$cluster" --ranks 4 --svg trace.svg
expect_full ir.txt 0 "$spora" ir "$prog" --stage grad -o ir.txt

# With room again, the same commands replace the files.
rm -f .fill
"$spora" run "$dir/v2_ckpt.sp" > /dev/null && ! cmp -s model.ckpt "$dir/before/model.ckpt" ||
  fail "with room, the checkpoint was not replaced"
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "every write failed cleanly"
