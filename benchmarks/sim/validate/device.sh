#!/usr/bin/env bash
# validate.py on the device machine (the `device` tool's: 16 cores, so 4 MPI ranks have a core
# each), with the spora binary and the Open MPI that tests/gpu/pack.sh carried in .gpu-carry.
# The protocol is validate.py's; only the machine differs. The Fashion-MNIST epochs are left out
# (the files do not fit beside the binaries in what a device call carries).
#
#   on the development machine: tests/gpu/pack.sh build
#   on the device (repository root, carry [".gpu-carry"]): bash benchmarks/sim/validate/device.sh
#
# Writes $OUT/sim_validation_device.{json,md}, $OUT/machine.txt and $OUT/smoke.log.
# SPORA_VALIDATE_BUDGET (seconds, default 420) bounds validate.py; SPORA_VALIDATE_ROUNDS (3).
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/spora-validate-out-$$}
mkdir -p "$OUT"
. "$ROOT/tests/gpu/carry_env.sh"
spora_carry_binaries "$ROOT"
[ -n "$PACK" ] && [ -x "$PACK/bin/spora" ] || { echo "device.sh: no .gpu-carry/pack.tar.xz (run tests/gpu/pack.sh)"; exit 1; }
spora_carry_mpi "$ROOT" "/tmp/spora-mpi-$$" || { echo "device.sh: no .gpu-carry/mpi.tar.xz"; exit 1; }
SPORA="$PACK/bin/spora"
{
  echo "date: $(date -u +%FT%TZ)"
  grep -m1 "model name" /proc/cpuinfo
  echo "cores: $(nproc)"
  lscpu 2>/dev/null | grep -E "^(L1d|L2|L3|Thread|Core|Socket|Model name|Flags)" | cut -c1-300
  mpirun --version 2>&1 | head -1
  echo "load: $(cat /proc/loadavg)"
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" | grep -v Flags

# A 2-rank step first: the carried Open MPI has to start ranks here. Where its shared-memory
# transport cannot copy between processes directly (CMA), it is told to go through its buffers.
smoke() {
  timeout 60 "$SPORA" train-step benchmarks/sim/w2_mlp.sp --strategy \
    benchmarks/sim/validate/strategies/w2_dp2.json --ranks 2 --steps 3 --batch 64 >>"$OUT/smoke.log" 2>&1
}
if ! smoke; then
  echo "device.sh: the 2-rank step failed with the default transport; retrying without CMA" | tee -a "$OUT/smoke.log"
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  smoke || { echo "device.sh: the 2-rank step failed (smoke.log):"; tail -20 "$OUT/smoke.log"; exit 1; }
fi
tail -3 "$OUT/smoke.log"

PYTHONUNBUFFERED=1 timeout "${SPORA_VALIDATE_BUDGET:-420}" python3 benchmarks/sim/validate/validate.py \
  --spora "$SPORA" --rounds "${SPORA_VALIDATE_ROUNDS:-3}" --only w2,w3,w4 \
  --out "$OUT/sim_validation_device" 2>&1 | tee "$OUT/validate.log"
rc=${PIPESTATUS[0]}
[ -f "$OUT/sim_validation_device.md" ] && cat "$OUT/sim_validation_device.md"
exit "$rc"
