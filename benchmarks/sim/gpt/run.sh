#!/usr/bin/env bash
# Regenerates the GPT auto-vs-Megatron table (papers/gpt_auto_vs_megatron.md): builds
# `gpt_study` and runs it on the 64-node DGX A100 spec; the table goes to results.md, every
# simulated configuration to results.csv, the progress to results.log.
#   benchmarks/sim/gpt/run.sh [BUILD_DIR] [gpt_study options, e.g. --sizes 1.7B,3.6B]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${1:-$root/build}"
shift || true
ninja -C "$build" gpt_study
"$build/bin/gpt_study" --csv "$here/results.csv" --trace "$here/results_hand_trace.json" "$@" \
    > "$here/results.md" 2> "$here/results.log"
cat "$here/results.md"
