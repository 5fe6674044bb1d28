#!/bin/sh
# Soak benchmark (not a test): trains and evaluates benchmarks/soak/soak.sp (the Fashion-MNIST
# MLP, an epoch of training, one of evaluation and a checkpoint, over and over) in one process
# for DURATION seconds (default 3600), samples its resident memory (VmRSS of /proc/PID/status)
# once a minute, then stops it with SIGTERM. Writes OUT (default benchmarks/results/soak.txt):
# the machine, the command, one line per sample, and the growth from the first sample after
# the first epoch to the last.
#   benchmarks/soak/run.sh [DURATION] [OUT]        (SPORA: the binary, default build/bin/spora)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
duration=${1:-3600}
out=${2:-$root/benchmarks/results/soak.txt}
spora=${SPORA:-$root/build/bin/spora}
interval=${SOAK_INTERVAL:-60}
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2> /dev/null; rm -rf "$dir"' EXIT
cd "$dir"
command="$spora run $root/benchmarks/soak/soak.sp"
$command > train.log 2> train.err &
pid=$!
start=$(date +%s)
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2> /dev/null; }
{
  echo "# Soak: $command, in one process, for $duration s; VmRSS every $interval s"
  echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
    "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# started $(date -u '+%Y-%m-%d %H:%M:%S UTC'), spora $(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo '?')"
  echo "# minute  epochs_done  rss_mb"
} > "$dir/report"
first=""
first_epochs=0
last=""
while :; do
  sleep "$interval"
  kill -0 "$pid" 2> /dev/null || { echo "# the program stopped early:" >> "$dir/report"; tail -5 train.err >> "$dir/report"; break; }
  now=$(($(date +%s) - start))
  kb=$(rss)
  epochs=$(grep -c '^epoch' train.log || true)
  awk -v m=$((now / 60)) -v e="$epochs" -v kb="$kb" 'BEGIN { printf "%8d  %11d  %6.1f\n", m, e, kb / 1024 }' >> "$dir/report"
  # The baseline: the first sample once an epoch has finished (data decoded, kernels built).
  if [ -z "$first" ] && [ "$epochs" -ge 1 ]; then first=$kb; first_epochs=$epochs; fi
  last=$kb
  [ "$now" -ge "$duration" ] && break
done
kill -TERM "$pid" 2> /dev/null && wait "$pid" 2> /dev/null || true
pid=""
epochs=$(grep -c '^epoch' train.log || true)
{
  echo "# last epoch: $(grep '^epoch' train.log | tail -1) (epoch, train loss, test loss, test accuracy)"
  if [ -n "$first" ]; then
    awk -v f="$first" -v fe="$first_epochs" -v l="$last" -v e="$epochs" 'BEGIN {
      printf "# RSS after epoch %d: %.1f MB; at the end (%d epochs): %.1f MB; growth %.1f MB (%.1f KB per epoch)\n",
        fe, f / 1024, e, l / 1024, (l - f) / 1024, (e > fe ? (l - f) / (e - fe) : 0) }'
  fi
  echo "# stopped with SIGTERM: $(tail -1 train.err)"
} >> "$dir/report"
mkdir -p "$(dirname "$out")"
cp "$dir/report" "$out"
cat "$out"
