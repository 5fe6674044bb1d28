#!/usr/bin/env bash
# The fuzz smoke run: every built fuzz target for N seconds (default 20) over its seed corpus;
# fails when any target reports a crash, a hang (10 s per input), a leak, a sanitizer report or
# more than 2 GB of memory. Builds nothing: build the targets first (README.md of this folder).
#   tests/fuzz/smoke.sh [SECONDS]          (also: ./spora test --fuzz-smoke [SECONDS])
# Environment: SPORA_FUZZ_BUILD_DIR (default build-fuzz), SPORA_FUZZ_CORPUS (default
# fuzz-corpus; seeded by seed_corpora.sh when a target's folder is missing). New inputs go to a
# temporary folder, so the seed corpus is not changed; a failing input is kept as
# fuzz-artifacts/<target>-crash-... (or -timeout-, -leak-, -oom-).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-20}"
build="${SPORA_FUZZ_BUILD_DIR:-$root/build-fuzz}"
corpus="${SPORA_FUZZ_CORPUS:-$root/fuzz-corpus}"
artifacts="$root/fuzz-artifacts"

targets=()
for t in "$build"/bin/fuzz_*; do
  [ -x "$t" ] && [ "$(basename "$t")" != fuzz_seeds ] && targets+=("$t")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "smoke.sh: no fuzz targets in $build/bin; build them first (tests/fuzz/README.md)" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if [ ! -d "$corpus/$(basename "$t")" ]; then
    "$root/tests/fuzz/seed_corpora.sh" "$build" "$corpus" > /dev/null || exit 2
    break
  fi
done

mkdir -p "$artifacts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
  name="$(basename "$t")"
  mkdir -p "$work/$name"
  log="$work/$name.log"
  "$t" "$work/$name" "$corpus/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" > "$log" 2>&1
  rc=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1)"
  if [ $rc -eq 0 ]; then
    echo "ok     $name: ${runs:-?} runs, ${cov:-cov: ?} in ${seconds} s"
  else
    echo "FAILED $name (exit $rc):"
    grep -E 'ERROR|SUMMARY|Test unit written|deadly signal|==[0-9]+==' "$log" | head -20 | sed 's/^/  /'
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz smoke: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
  exit 1
fi
echo "fuzz smoke: all ${#targets[@]} targets ran ${seconds} s without a report"
