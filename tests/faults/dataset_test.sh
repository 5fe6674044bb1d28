#!/bin/sh
# Damaged dataset files at the command line: `.npy` and idx files read by load_npy / load_idx,
# and a Fashion-MNIST directory of gzip idx files read by fashion_mnist(root=...), cut short and
# with bytes overwritten. Every run must end with status 0 (the damage is in data bytes that no
# format checks) or 1 with an error naming the file and the byte ("'x.npy' is truncated at byte
# 100: ..."), never a crash or another status. Every byte of each format: tests/runtime/
# data_faults_test.cpp (DataFaults.*).
#   dataset_test.sh SPORA
set -u
spora=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failures=0
runs=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cat > make.sp <<'SP'
def main() {
    let w = normal(0.0, 1.0, shape=(16, 8), seed=1)
    save_npy(w, "good.npy")
    save_idx(w, "good.idx")
    save_idx(uniform(0.0, 1.0, shape=(30, 28, 28), seed=2) > 0.5, "images")
    save_idx(uniform(0.0, 1.0, shape=(30,), seed=3) > 0.5, "labels")
}
SP
"$spora" run make.sp || { echo "FAIL: cannot write the files"; exit 1; }
gzip -n images labels
for f in npy idx; do
  printf 'def main() {\n    print(sum(load_%s("x.%s")))\n}\n' "$f" "$f" > "load_$f.sp"
done
cat > fashion.sp <<'SP'
def main() {
    var n = 0
    for (x, y) in fashion_mnist("test", root="fm", batch=8) {
        n = n + len(y)
    }
    print(n)
}
SP

# check WHAT FILE [error|any] PROGRAM: run it; status 1 must name FILE and a byte.
check() {
  what=$1 file=$2 must=$3 prog=$4
  runs=$((runs + 1))
  "$spora" run "$prog" > out 2> err
  rc=$?
  case $rc in
    0) [ "$must" = any ] || fail "$what: read without an error" ;;
    1) grep -q "'[^']*$file' .*at byte [0-9]" err || { fail "$what: the error does not name '$file' and a byte:"; cat err; } ;;
    *) fail "$what: exit status $rc (a crash?)"; cat err ;;
  esac
  [ $rc -eq 1 ] && [ -n "${verbose:-}" ] && echo "$what: $(grep -m1 error err)"
  return 0
}

# cut FILE BYTES: the first BYTES of good.EXT as x.EXT.
cut_to() { head -c "$2" "good.$1" > "x.$1"; }
# poke FILE OFFSET VALUE: good.EXT with the byte at OFFSET replaced by VALUE (octal).
poke() {
  cp "good.$1" "x.$1"
  printf "\\$3" | dd of="x.$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}

verbose=1
npy_size=$(wc -c < good.npy)
for n in 0 9 64 128 300 $((npy_size - 1)); do
  cut_to npy $n
  check "npy cut at $n" x.npy error load_npy.sp
done
for at in 0 6 9 20 30 60; do
  poke npy $at 377
  check "npy byte $at = 0xff" x.npy any load_npy.sp
done
poke npy $(($(grep -abo "(16" good.npy | cut -d: -f1 | head -1) + 1)) 055
check "npy shape (-6, 8)" x.npy error load_npy.sp
idx_size=$(wc -c < good.idx)
for n in 0 3 7 12 $((idx_size - 1)); do
  cut_to idx $n
  check "idx cut at $n" x.idx error load_idx.sp
done
for at in 1 2 3 9; do
  poke idx $at 377
  check "idx byte $at = 0xff" x.idx any load_idx.sp
done
cat good.idx good.idx > x.idx
check "idx with bytes after its data" x.idx error load_idx.sp

# fashion_mnist(root=fm): the headers are read when the program compiles, the data when it runs.
fm() {
  rm -rf fm
  mkdir fm
  cp images.gz fm/t10k-images-idx3-ubyte.gz
  cp labels.gz fm/t10k-labels-idx1-ubyte.gz
}
fm
"$spora" run fashion.sp > out 2> err && grep -qx 30 out || { fail "the good Fashion-MNIST directory:"; cat out err; }
gz_size=$(wc -c < images.gz)
for n in 2 20 $((gz_size / 2)) $((gz_size - 8)) $((gz_size - 1)); do
  fm
  head -c $n images.gz > fm/t10k-images-idx3-ubyte.gz
  check "images.gz cut at $n" t10k-images-idx3-ubyte.gz error fashion.sp
done
for at in 3 12 $((gz_size / 2)) $((gz_size - 2)); do
  fm
  cp images.gz x.gz
  printf '\125' | dd of=x.gz bs=1 seek="$at" conv=notrunc 2> /dev/null
  cp x.gz fm/t10k-images-idx3-ubyte.gz
  check "images.gz byte $at = 0x55" t10k-images-idx3-ubyte.gz any fashion.sp
done
# A label past Fashion-MNIST's 10 classes.
fm
gunzip -c labels.gz > lab
printf '\310' | dd of=lab bs=1 seek=12 conv=notrunc 2> /dev/null
gzip -n -c lab > fm/t10k-labels-idx1-ubyte.gz
check "label 200" t10k-labels-idx1-ubyte.gz error fashion.sp
grep -q "at byte 12 of its decompressed data: label 200" err || fail "the label's error: $(cat err)"

echo "$runs runs"
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "every damaged file was a located error or read"
