#!/bin/sh
# ZeRO on 4 ranks (data parallelism, `--zero 0..3`) of mlp_f64.sp: the measured peak tensor memory
# of rank 0 (`--stats`) must shrink with the stage by what ZeRO moves off the rank, and the
# collectives must be those of the stage. P is the model's size: 203,600 bytes of f64 parameters
# (784x32 + 32 + 32x10 + 10 values); Adam's state is 2P.
#   stage 1: m and v in quarters (b2, 10 values, does not divide by 4 and stays whole): the peak
#            drops by at least 0.75 x 2P x 0.9 = 275 kB against stage 0, and every step adds an
#            all_gather per cut parameter to data parallelism's reductions;
#   stage 2: gradients cut as soon as computed: no more than stage 1;
#   stage 3: parameters in quarters too: the peak drops by at least 0.75 x P x 0.5 = 76 kB more
#            (whole copies live while a primitive uses them), and the backward pass gathers the
#            parameters it reuses again (more collective steps than stage 1).
#   zero_memory_test.sh SPORA PROG
set -eu
spora=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for z in 0 1 2 3; do
  "$spora" run "$prog" --ranks 4 --zero $z --stats > out$z.txt 2> err$z.txt || { cat err$z.txt; exit 1; }
done
python3 - <<'PY'
import re
peak, steps, placed = {}, {}, {}
for z in range(4):
    err = open(f"err{z}.txt").read()
    peak[z] = float(re.search(r"measured peak tensor memory ([\d.]+) MB", err).group(1)) * 1e6
    m = re.search(r"(\d+) collective steps .* (\d+) parameters placed", err)
    steps[z], placed[z] = int(m.group(1)), int(m.group(2))
    print(f"zero {z}: peak {peak[z] / 1e3:8.1f} kB, {steps[z]} collective steps, {placed[z]} placed")
P = 203600
assert peak[0] - peak[1] >= 0.75 * 2 * P * 0.9, "stage 1 does not shard Adam's state"
assert peak[2] <= peak[1], "stage 2 holds more than stage 1"
assert peak[2] - peak[3] >= 0.75 * P * 0.5, "stage 3 does not shard the parameters"
assert placed[0] == 0 and placed[1] > 0, "ZeRO placed nothing"
assert steps[1] > steps[0] and steps[3] > steps[1], "the collectives do not follow the stages"
print("ZeRO shrinks rank 0's peak memory stage by stage")
PY
