#!/bin/sh
# A user's program on 2 MPI ranks placed on 2 hosts gives the one-host result. The two hosts are
# Linux network namespaces joined by a veth pair (made here, removed on exit): mpirun runs in
# namespace A with a hostfile of the two addresses (slots=1 each) and an rsh agent that enters
# namespace B, so rank 1 runs behind its own network stack and every message between the ranks
# (Open MPI's out-of-band channel and the tcp btl) crosses the veth link.
#   multihost_test.sh SPORA PROG
# First the ranks report their addresses (they must differ: rank 0 in A, rank 1 in B). Then
# `SPORA run PROG --ranks 2 --strategy dp` on one host (its own mpirun) against
# `SPORA run PROG --strategy dp` under the 2-host mpirun (-np 2 sizes the dp mesh). What is compared: stdout in full (the program prints only `epoch ...`
# lines, no timings; the progress bars with samples/s go to stderr and are not compared), and
# the checkpoint and curves the program saves, byte for byte: with 2 ranks every all-reduce is
# one a+b, so the network path cannot change a bit.
# Exits 77 (ctest: skipped) where the namespaces or the veth pair cannot be made (not root, no
# `ip`, no netns support) or Open MPI's mpirun is missing; SPORA_MULTIHOST_FORCE_SKIP=1 forces
# that path.
set -u
[ $# -eq 2 ] || { echo "usage: $0 SPORA PROG" >&2; exit 2; }
spora=$1 prog=$2
case $spora in /*) ;; *) spora=$PWD/$spora ;; esac
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "${SPORA_MULTIHOST_FORCE_SKIP:-0}" = 1 ] && skip "SPORA_MULTIHOST_FORCE_SKIP=1"
[ "$(id -u)" -eq 0 ] || skip "not root: making network namespaces needs root"
command -v ip > /dev/null 2>&1 || skip "no 'ip' command (iproute2)"
command -v timeout > /dev/null 2>&1 || skip "no 'timeout' command"
command -v mpirun > /dev/null 2>&1 || skip "no mpirun"
mpirun --version 2>&1 | grep -q "Open MPI" || skip "mpirun is not Open MPI"

nsa=spora_a_$$ nsb=spora_b_$$
veth_a=spva$$ veth_b=spvb$$  # interface names: at most 15 characters
net=10.77.$(($$ % 250 + 1))
addr_a=$net.1 addr_b=$net.2
dir=$(mktemp -d) || fail "mktemp -d"

cleanup() {
  for ns in "$nsa" "$nsb"; do
    # Whatever still runs in our namespace (a timed-out rank): end it by its id.
    for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
    ip netns del "$ns" 2> /dev/null  # also removes the veth end inside it
  done
  ip link del "$veth_a" 2> /dev/null  # if it never left the root namespace
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

ip netns add "$nsa" 2> "$dir/ip.err" || skip "cannot make a network namespace: $(cat "$dir/ip.err")"
ip netns add "$nsb" 2> "$dir/ip.err" || skip "cannot make a network namespace: $(cat "$dir/ip.err")"
ip link add "$veth_a" type veth peer name "$veth_b" 2> "$dir/ip.err" ||
  skip "cannot make a veth pair: $(cat "$dir/ip.err")"
{
  ip link set "$veth_a" netns "$nsa" &&
    ip link set "$veth_b" netns "$nsb" &&
    ip -n "$nsa" addr add "$addr_a/24" dev "$veth_a" &&
    ip -n "$nsb" addr add "$addr_b/24" dev "$veth_b" &&
    ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up &&
    ip -n "$nsa" link set "$veth_a" up && ip -n "$nsb" link set "$veth_b" up
} 2> "$dir/ip.err" || skip "cannot set up the veth link: $(cat "$dir/ip.err")"
echo "hosts: $addr_a (namespace $nsa), $addr_b (namespace $nsb)"

# The rsh agent Open MPI calls as `agent [ssh options] HOST COMMAND...` to start its daemon
# (orted) on HOST: it runs COMMAND in HOST's namespace. Local exec, so the environment (PATH,
# LD_LIBRARY_PATH, the OMPI_* settings) reaches orted as it is here.
cat > "$dir/agent.sh" << EOF
#!/bin/sh
while [ \$# -gt 0 ]; do
  case \$1 in
    -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=\$1
shift
case \$host in
  $addr_a) ns=$nsa ;;
  $addr_b) ns=$nsb ;;
  *) echo "agent.sh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$dir/agent.sh"
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" > "$dir/hosts"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# two_hosts LIMIT WDIR COMMAND...: mpirun in namespace A over the hostfile, every byte between the
# ranks on the veth subnet. Every run is bounded (LIMIT seconds, then killed) so that the script
# ends, cleaning up, within ctest's TIMEOUT of 300 s: a hang fails, it leaves no namespaces behind.
two_hosts() {
  limit=$1 wdir=$2
  shift 2
  set -- --allow-run-as-root -np 2 --hostfile "$dir/hosts" --wdir "$wdir" \
    --mca plm_rsh_agent "$dir/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
    -x PATH -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "$@"
  [ -n "${LD_LIBRARY_PATH:-}" ] && set -- -x LD_LIBRARY_PATH "$@"
  timeout -k 10 "$limit" ip netns exec "$nsa" mpirun "$@" < /dev/null
}

# 1. Where the ranks run.
mkdir "$dir/where" "$dir/one" "$dir/two"
# shellcheck disable=SC2016
two_hosts 60 "$dir/where" sh -c \
  'echo "rank $OMPI_COMM_WORLD_RANK" $(ip -o -4 addr show | grep -o "10\.77\.[0-9]*\.[0-9]*")' \
  > "$dir/where.txt" 2> "$dir/where.err" ||
  { cat "$dir/where.txt" "$dir/where.err"; fail "mpirun on the 2 hosts"; }
sort "$dir/where.txt"
at0=$(sed -n 's/^rank 0 //p' "$dir/where.txt" | tr -d ' ')
at1=$(sed -n 's/^rank 1 //p' "$dir/where.txt" | tr -d ' ')
[ "$at0" = "$addr_a" ] || fail "rank 0 sees address '$at0', not $addr_a"
[ "$at1" = "$addr_b" ] || fail "rank 1 sees address '$at1', not $addr_b"
echo "rank 0 runs on $at0, rank 1 on $at1: different network stacks"

# 2. The program on one host, then on the 2 hosts.
(cd "$dir/one" && timeout -k 10 100 "$spora" run "$prog" --ranks 2 --strategy dp) \
  > "$dir/one.txt" 2> "$dir/one.err" || { cat "$dir/one.err"; fail "the one-host run"; }
link_bytes() {  # bytes B's end of the link has sent and received
  ip netns exec "$nsb" cat /sys/class/net/"$veth_b"/statistics/tx_bytes \
    /sys/class/net/"$veth_b"/statistics/rx_bytes | awk '{ n += $1 } END { print n }'
}
before=$(link_bytes)
two_hosts 100 "$dir/two" "$spora" run "$prog" --strategy dp \
  > "$dir/two.txt" 2> "$dir/two.err" ||
  { cat "$dir/two.txt" "$dir/two.err"; fail "the 2-host run"; }
crossed=$(($(link_bytes) - before))
echo "--- one host, 2 ranks"; cat "$dir/one.txt"
echo "--- 2 hosts, 1 rank each"; cat "$dir/two.txt"
[ -s "$dir/one.txt" ] || fail "the one-host run printed nothing"
cmp -s "$dir/one.txt" "$dir/two.txt" ||
  { diff "$dir/one.txt" "$dir/two.txt"; fail "the printed lines differ"; }
saved=0
for f in $(cd "$dir/one" && ls); do
  [ -f "$dir/two/$f" ] || fail "the 2-host run did not save $f"
  cmp -s "$dir/one/$f" "$dir/two/$f" || fail "$f differs from the one-host run's"
  saved=$((saved + 1))
done
echo "$crossed bytes crossed the veth link during the 2-host run"
# The gradients' all-reduces alone are megabytes: less means the ranks did not talk over the link.
[ "$crossed" -gt 1000000 ] || fail "only $crossed bytes crossed the veth link"
lines=$(wc -l < "$dir/one.txt")
echo "PASS: 2 hosts print the same $lines lines and save the same $saved files as one host"
