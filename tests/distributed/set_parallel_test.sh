#!/bin/sh
# set_parallel(...) in the program does what the command line's flags do:
#   1. `spora run set_parallel_mlp.sp` (ranks=4, strategy="dp2tp2.json" next to it, zero=1)
#      prints exactly what `spora run mlp_f64.sp --ranks 4 --strategy dp2tp2.json --zero 1`
#      prints, and its --stats say 4 ranks on the 2x2 mesh;
#   2. flags win: `spora run set_parallel_mlp.sp --ranks 1` prints what one device prints;
#   3. a malformed call or one beside set_mode("eager") is a located error before anything runs,
#      and --mode eager against it is refused, naming set_parallel.
#   set_parallel_test.sh SPORA DIR   (DIR: tests/distributed)
set -eu
spora=$1 dist=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$spora" run "$dist/set_parallel_mlp.sp" --stats > program.txt 2> program.err || { cat program.err; exit 1; }
"$spora" run "$dist/mlp_f64.sp" --ranks 4 --strategy "$dist/dp2tp2.json" --zero 1 > flags.txt 2> flags.err ||
  { cat flags.err; exit 1; }
cmp program.txt flags.txt || { echo "set_parallel and the flags print differently"; diff program.txt flags.txt; exit 1; }
grep -q "stats: rank 0 of 4 (.*dp2tp2.json mesh 2x2)" program.err || { echo "not 4 ranks on 2x2:"; cat program.err; exit 1; }
"$spora" run "$dist/set_parallel_mlp.sp" --ranks 1 > one_flag.txt 2> /dev/null
"$spora" run "$dist/mlp_f64.sp" > one.txt 2> /dev/null
cmp one_flag.txt one.txt || { echo "--ranks 1 did not win over set_parallel"; exit 1; }
# --mode eager on the command line against the program's set_parallel: refused, saying whose.
if "$spora" run --mode eager "$dist/set_parallel_mlp.sp" > eager_flag.out 2> eager_flag.err; then
  echo "--mode eager ran a set_parallel program"; exit 1
fi
grep -qF "the program's set_parallel(...) runs a program in graph mode" eager_flag.err ||
  { cat eager_flag.err; exit 1; }
# Errors: the call's location, the source line and the reason; nothing runs (no output).
check_error() {  # name, first statements of main, expected message part
  printf 'def main() {\n%s\n    print("ran")\n}\n' "$2" > "$1.sp"
  if "$spora" run "$1.sp" > "$1.out" 2> "$1.err"; then echo "$1: ran"; exit 1; fi
  grep -qE "$1.sp:[0-9]+:[0-9]+: error" "$1.err" || { echo "$1: no location:"; cat "$1.err"; exit 1; }
  grep -qF "$3" "$1.err" || { echo "$1: expected '$3':"; cat "$1.err"; exit 1; }
  [ ! -s "$1.out" ] || { echo "$1: printed something"; exit 1; }
}
check_error bad_ranks '    set_parallel(ranks="two")' "set_parallel's ranks= takes an integer literal"
check_error bad_zero '    set_parallel(ranks=2, zero=5)' "zero= is a ZeRO stage 0-3, got 5"
check_error bad_name '    set_parallel(ranks=2, shards=2)' "set_parallel has no argument 'shards'"
check_error both '    set_parallel(strategy="dp", mesh="2x2")' "give one of them"
check_error eager '    set_mode("eager")
    set_parallel(ranks=2)' "set_parallel runs main on several ranks in graph mode"
check_error late '    print("first")
    set_parallel(ranks=2)' "must be among the first statements of main"
echo "set_parallel runs as its flags do; bad calls are located errors"
