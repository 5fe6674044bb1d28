#!/usr/bin/env bash
# Fills the seed corpus of every fuzz target from the repository's own files:
#   tests/fuzz/seed_corpora.sh [BUILD_DIR [CORPUS_DIR]]
# BUILD_DIR (default build-fuzz) holds bin/fuzz_seeds, which writes the binary seeds (.npy, idx,
# checkpoints) with Spora's writers; CORPUS_DIR (default fuzz-corpus, ignored by git) gets one
# folder per target. With SPORA set to a built `spora` program, the IR of every example and
# golden program (typed and fused stages) is added to the IR corpus. Existing corpus files are kept.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build-fuzz}"
out="${2:-$root/fuzz-corpus}"
cd "$root"

copy() {  # copy TARGET FILE...
  local target="$1"
  shift
  mkdir -p "$out/$target"
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$out/$target/$(echo "$f" | tr '/' '_')"
  done
  return 0
}

copy fuzz_frontend examples/*.sp tests/golden/*.sp tests/negative/*.sp tests/conformance/*.sp \
  tests/conformance/*/*.sp lang/std/*.sp
copy fuzz_ir $(find examples tests -name '*.ir')
copy fuzz_strategy examples/strategies/*.json tests/parallel/*.json
copy fuzz_cluster $(find examples tests -name '*.yaml')
copy fuzz_schedule $(find examples tests benchmarks -name '*.sched')
copy fuzz_gemm_choices tests/fuzz/gemm_choices_seed.tsv

if [ -n "${SPORA:-}" ]; then
  for f in examples/*.sp tests/golden/*.sp; do
    for stage in typed fused; do
      ir="$out/fuzz_ir/$(echo "$f" | tr '/' '_').$stage.ir"
      "$SPORA" ir --stage "$stage" "$f" > "$ir" 2> /dev/null || rm -f "$ir"
    done
  done
fi

seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
"$build/bin/fuzz_seeds" "$seeds"
for kind in npy idx checkpoint; do
  mkdir -p "$out/fuzz_$kind"
  cp "$seeds/$kind"/* "$out/fuzz_$kind/"
done
# The gzip-compressed forms the readers also take.
for f in "$seeds"/npy/seed0.npy "$seeds"/idx/seed0.idx; do
  kind="$(basename "$(dirname "$f")")"
  gzip -c "$f" > "$out/fuzz_$kind/$(basename "$f").gz"
done
for t in "$out"/*/; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"; done
