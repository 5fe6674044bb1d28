#!/usr/bin/env bash
# clang-format check of what a change touches: the C++ lines (.h .cpp .cu .cuh) that differ from
# the base, checked against the repository's .clang-format with clang-format --dry-run --Werror.
# Untouched lines are not checked, so a change never has to reformat code it did not write.
#
#   tests/format_check.sh                 base: the merge base with origin/main, else HEAD~1
#   tests/format_check.sh BASE            base: any commit (e.g. main, HEAD~3)
#   tests/format_check.sh --whole-files   every line of each touched file
#   tests/format_check.sh [BASE] -- PATH...  only these files or folders
#
# The working tree is compared with the base (uncommitted edits count). Exit 0: clean; 1: lines
# to reformat (clang-format's warnings name them; `git clang-format BASE` fixes them); 77:
# skipped (no clang-format, no git checkout, or no base), which ctest reports as skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

whole=0
base=""
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --whole-files) whole=1 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    --) shift; paths=("$@"); break ;;
    *) base="$1" ;;
  esac
  shift
done

skip() { echo "format check skipped: $1"; exit 77; }

command -v clang-format >/dev/null 2>&1 || skip "clang-format is not installed"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "not a git checkout"
if [ -z "$base" ]; then
  if git rev-parse --verify -q origin/main >/dev/null; then
    base=$(git merge-base HEAD origin/main)
  elif git rev-parse --verify -q HEAD~1 >/dev/null; then
    base=HEAD~1
  else
    skip "no origin/main and no parent commit to compare with"
  fi
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null || skip "no commit '$base'"

mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- "${paths[@]}" |
  grep -E '\.(h|cpp|cu|cuh)$' | grep -v '^build' || true)
if [ ${#files[@]} -eq 0 ]; then
  echo "format check: no C++ file changed since $(git rev-parse --short "$base")"
  exit 0
fi

failed=0
checked=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  lines=()
  if [ $whole -eq 0 ]; then
    # Hunk headers "@@ -a,b +c,d @@": lines c .. c+d-1 of the new file (d omitted means 1).
    while read -r start count; do
      [ "$count" -eq 0 ] && continue
      lines+=("--lines=$start:$((start + count - 1))")
    done < <(git diff -U0 "$base" -- "$f" |
      sed -n 's/^@@ -[0-9,]* +\([0-9]*\)\(,\([0-9]*\)\)\{0,1\} @@.*/\1 \3/p' |
      awk '{print $1, ($2 == "" ? 1 : $2)}')
    [ ${#lines[@]} -eq 0 ] && continue
  fi
  checked=$((checked + 1))
  clang-format --style=file --dry-run --Werror "${lines[@]}" "$f" || failed=1
done

what=$([ $whole -eq 1 ] && echo "touched files" || echo "changed lines of $checked files")
if [ $failed -ne 0 ]; then
  echo "format check: the $what since $(git rev-parse --short "$base") need clang-format" \
    "(git clang-format $(git rev-parse --short "$base") reformats just those lines)"
  exit 1
fi
echo "format check: the $what since $(git rev-parse --short "$base") are formatted"
