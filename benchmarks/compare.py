#!/usr/bin/env python3
"""Side-by-side run of the reference workloads W1-W6 (benchmarks/workloads/README.md): the
PyTorch peer script (benchmarks/peer/torch_workloads.py) and our bench_workloads in one
invocation (same machine state, 2 threads each), then one table of ratios against the targets,
plus W1, W2 and W4 (ours and the peer) against their FLOPs at the machine's SGEMM rate and W5
against the triad bandwidth bound, both measured in the same run.

Usage:  python3 benchmarks/compare.py [--build build] [--rounds N] [--only W2,W5] [--quick] [--out results.json]
                                     [--blas-kernels env|native]
        python3 benchmarks/compare.py --no-run --ours-json ours.json --peer-json peer.json   (table only)

The peer's number is PyTorch *eager* in its best environment (the fastest of the script's
configurations: default, OMP_WAIT_POLICY=PASSIVE, + glibc malloc kept off mmap), as
benchmarks/workloads/README.md defines it; TorchScript / nn.RNN variants are shown for
information. Ours runs with OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 and no other tuning.
Every ratio is printed, passing or not; bg columns are the CPU cores other processes used
while timing (> 0.15: contaminated); (cpu) is our process's CPU time per step (all threads),
which preemption does not inflate; min/min is the ratio of the fastest runs (ours / the peer's
fastest eager run in any env), the least contaminated estimate when the machine is shared.

--rounds N repeats the interleaved run N times (each round: per workload, the peer then ours)
and ends with one table: per workload and mode the median ratio with its min-max over the
rounds. --out then holds `rows` (workload, mode, ours_ms and peer_ms: medians over the rounds,
ratio_median, ratio_min, ratio_max, ratios, target, result), `rounds` (each round's rows and raw
results), `ours` / `peer` (the last round's raw results) and `machine` (CPU model and flags,
cores, memory, compiler, library versions, the git commit and whether the tree was clean).
"""
import argparse
import json
import os
import re
import subprocess
import sys
from statistics import median
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(HERE, "peer", "torch_workloads.py")
IDS = ["W1", "W2", "W3", "W4", "W5", "W6"]
# Targets of the issue: ours / PyTorch eager (best env), at most this.
# Issue 21's targets: graph mode at most 0.8 of the peer on W1-W4 and 0.2 on W5, eager at most
# 1.1 everywhere, W6 at most 1.0 of the peer's fastest variant (nn.RNN), W2 graph within 1.3x of
# its GEMM bound, fused never slower than unfused.
TARGETS = {("W1", "graph"): 0.8, ("W2", "graph"): 0.8, ("W3", "graph"): 0.8, ("W4", "graph"): 0.8,
           ("W5", "graph"): 0.2}
EAGER_TARGET = 1.1
W6_FASTEST_TARGET = 1.0
FUSED_TARGET = 1.0
W1_FLOP = 2 * 64 * (784 * 512 + 512 * 512 + 512 * 10)  # 86 MFLOP
W2_FLOP = W1_FLOP * 3  # 257 MFLOP
# W4's products: forward 4 projections 1024 x 256 x 256, the feed-forward's two 1024 x 256 x 1024,
# attention's two batched 32 x (128 x 128 x 64); the backward twice that (input and weight
# cotangents, x's included): 5.23 GFLOP.
W4_FLOP = 3 * 2 * (4 * 1024 * 256 * 256 + 2 * 1024 * 256 * 1024 + 2 * 32 * 128 * 128 * 64)
# Workloads whose step is almost all GEMM: ours and the peer against the FLOPs at the machine's
# SGEMM 1024^3 rate, which shows how much room the peer leaves (no target but W2's).
GEMM_FLOP = {"W1": W1_FLOP, "W2": W2_FLOP, "W4": W4_FLOP}
W2_BOUND_TARGET = 1.3
W5_BYTES = 2 * 4 * 4 * 1024 * 1024  # read x, write y: 32 MB
W5_FUSED_TARGET = 3.0  # unfused / fused, at least
W5_PEER_TARGET = 5.0  # the peer / fused, at least
THREADS = "2"


def peer_python():
    """The Python that has PyTorch: Debian's python3-torch lives in /usr/bin/python3, which a
    pyenv or venv python3 earlier in PATH does not see."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    sys.exit("compare.py: no python3 with PyTorch found. On Debian 12: apt-get install python3-torch "
             f"(PyTorch 1.13.1 for /usr/bin/python3); elsewhere: {sys.executable} -m pip install torch")


def busy_cores(dt=1.0):
    def stat():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return v[0] + v[1] + v[2] + v[5] + v[6], sum(v)
    b0, t0 = stat()
    time.sleep(dt)
    b1, t1 = stat()
    return (b1 - b0) / max(t1 - t0, 1) * os.cpu_count()


def wait_quiet(max_wait, thr=0.10):
    """Blocks until the machine's CPU use is below thr cores twice in a row (as quiet.sh)."""
    start, ok = time.time(), 0
    while True:
        load = busy_cores()
        ok = ok + 1 if load < thr else 0
        if ok >= 2:
            return load
        if time.time() - start > max_wait:
            print(f"# WARNING: machine not quiet after {max_wait:.0f} s ({load:.2f} cores busy); measuring anyway",
                  file=sys.stderr)
            return load


def run_peer(args, env, only, out):
    cmd = [peer_python(), args.peer, "--out", out, "--quiet-wait", str(args.quiet_wait), "--only", only]
    if args.quick:
        cmd += ["--quick"]
    print("# peer: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.check_call(cmd, env=env, stdout=sys.stderr)
    return json.load(open(out))


def run_ours(args, env, ids, limits, out):
    exe = os.path.join(args.build, "bin", "bench_workloads")
    # The step benchmarks (graph, graph-nofuse, eager) and fuse-ratio (fused over unfused, the two
    # taking turns step by step); W<n>/ad-ratio has no peer side here.
    alts = [re.escape(i) + "/(graph|eager|fuse-ratio)" for i in ids] + (["Limit/"] if limits else [])
    cmd = [exe, "--benchmark_filter=^(" + "|".join(alts) + ")", f"--benchmark_out={out}",
           "--benchmark_out_format=json"]
    if args.quick:
        cmd += ["--benchmark_min_time=0.3"]
    wait_quiet(args.quiet_wait)
    print("# ours: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.check_call(cmd, env=env, stdout=sys.stderr)
    return json.load(open(out))


def run_all(args, env):
    """Both sides; with --interleave, workload by workload (peer then ours), so that each pair
    sees the same machine state on a shared machine; else the peer for all, then ours for all."""
    ids = args.only.split(",") if args.only else IDS
    tmp = "/tmp/spora_compare"
    if not args.interleave:
        peer = run_peer(args, env, ",".join(ids), tmp + "_peer.json")
        ours = run_ours(args, env, ids, True, tmp + "_ours.json")
        return ours, peer
    ours, peer = None, None
    for wid in ids:
        p = run_peer(args, env, wid, f"{tmp}_peer_{wid}.json")
        o = run_ours(args, env, [wid], wid == ids[-1], f"{tmp}_ours_{wid}.json")
        if peer is None:
            peer, ours = p, o
        else:
            peer["results"] += p["results"]
            ours["benchmarks"] += o["benchmarks"]
    return ours, peer


def ours_table(data):
    """{(id, mode): row} from Google Benchmark JSON; mode is graph, eager or the Limit name."""
    rows = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        rows[(parts[0], parts[1])] = b
    return rows


def peer_tables(data):
    """(best eager per id, best of any mode per id): {id: (median_ms, config, mode, bg, min_ms)}."""
    eager, anymode = {}, {}
    for r in data["results"]:
        wid = r["workload"].split()[0]
        row = (r["median_ms"], r["config"], r["mode"], r["bg_load"], r["min_ms"])
        if r["mode"].startswith("eager") and (wid not in eager or row[0] < eager[wid][0]):
            eager[wid] = row
        if wid not in anymode or row[0] < anymode[wid][0]:
            anymode[wid] = row
    return eager, anymode


def verdict(ratio, target):
    if target is None:
        return "-"
    return "pass" if ratio <= target else "MISS"


def print_report(ours, peer):
    o = ours_table(ours)
    pe, pa = peer_tables(peer)
    lines = []
    hdr = (f"{'workload':<8} {'mode':<12} {'ours ms':>9} {'(cpu)':>8} {'peer ms':>9} {'ratio':>6} {'target':>7} {'result':>6} {'min/min':>7}"
           f" {'bg ours':>7} {'bg peer':>7}  peer: best env (config) / fastest peer variant")
    lines += [hdr, "-" * len(hdr)]
    summary = []
    for wid in IDS:
        for mode in ("graph", "graph-nofuse", "eager"):
            if (wid, mode) not in o or wid not in pe:
                continue
            b = o[(wid, mode)]
            if b.get("error_occurred"):
                lines.append(f"{wid:<8} {mode:<12} {'error: ' + b.get('error_message', '?')}")
                continue
            ms = b["median_ms"]
            pms, pcfg, pmode, pbg, pmin = pe[wid]
            pmin = min(r["min_ms"] for r in peer["results"]
                       if r["workload"].split()[0] == wid and r["mode"].startswith("eager"))
            ratio = ms / pms
            target = EAGER_TARGET if mode == "eager" else TARGETS.get((wid, mode))
            v = verdict(ratio, target)
            amin = pa[wid]
            lines.append(f"{wid:<8} {mode:<12} {ms:>9.3f} {b.get('cpu_ms', float('nan')):>8.3f} {pms:>9.3f} {ratio:>6.2f} "
                         f"{'<= ' + format(target, '.1f') if target else '-':>7} {v:>6} {b['min_ms'] / pmin:>7.2f} {b['bg_load']:>7.2f} {pbg:>7.2f}"
                         f"  {pcfg}; fastest {amin[2]} {amin[0]:.3f} ms")
            summary.append(dict(workload=wid, mode=mode, ours_ms=ms, peer_ms=pms, ratio=ratio, target=target,
                                result=v, ours_min_ms=b["min_ms"], peer_min_ms=pmin, ours_cpu_ms=b.get("cpu_ms"),
                                bg_ours=b["bg_load"], bg_peer=pbg, peer_config=pcfg))
    # W6 against the peer's fastest variant of any mode (nn.RNN's C++ loop), and fused against
    # unfused graph mode on every workload.
    w6 = o.get(("W6", "graph"))
    if w6 and not w6.get("error_occurred") and "W6" in pa:
        r = w6["median_ms"] / pa["W6"][0]
        lines.append(f"W6 graph vs the peer's fastest variant ({pa['W6'][2]}, {pa['W6'][0]:.3f} ms): {r:.2f} "
                     f"(target <= {W6_FASTEST_TARGET}: {verdict(r, W6_FASTEST_TARGET)})")
        summary.append(dict(workload="W6", mode="graph vs fastest peer", ours_ms=w6["median_ms"],
                            peer_ms=pa["W6"][0], ratio=r, target=W6_FASTEST_TARGET,
                            result=verdict(r, W6_FASTEST_TARGET)))
    for wid in IDS:
        # From fuse-ratio (one step of each in turn) where it ran; else the quotient of the graph and
        # graph-nofuse benchmarks, timed one after the other (a change of the machine's speed
        # between them shows in the quotient).
        f = o.get((wid, "fuse-ratio"))
        g, n = o.get((wid, "graph")), o.get((wid, "graph-nofuse"))
        if f and not f.get("error_occurred") and "ratio" in f:
            summary.append(dict(workload=wid, mode="fused / unfused", ours_ms=f["fused_ms"],
                                unfused_ms=f["unfused_ms"], ratio=f["ratio"], target=FUSED_TARGET,
                                result=verdict(f["ratio"], FUSED_TARGET), interleaved=True))
        elif g and n and not g.get("error_occurred") and not n.get("error_occurred"):
            r = g["median_ms"] / n["median_ms"]
            summary.append(dict(workload=wid, mode="fused / unfused", ours_ms=g["median_ms"],
                                unfused_ms=n["median_ms"], ratio=r, target=FUSED_TARGET,
                                result=verdict(r, FUSED_TARGET), interleaved=False))
    fu = [f"{r['workload']} {r['ratio']:.2f}" for r in summary if r["mode"] == "fused / unfused"]
    if fu:
        lines.append("fused / unfused graph-mode step (target <= 1.0 beyond noise): " + ", ".join(fu))
    lines.append("")
    # Machine limits measured by our binary in the same run.
    # The faster library's SGEMM rate (OpenBLAS or oneDNN, whichever this machine runs faster).
    rates = [x for x in (o.get(("Limit", "Sgemm1024")), o.get(("Limit", "Sgemm1024OneDNN")))
             if x and not x.get("error_occurred")]
    sg = max(rates, key=lambda x: x["gflops_best"]) if rates else None
    w2g = o.get(("Limit", "W2Gemms"))
    w2g_dnnl = o.get(("Limit", "W2GemmsOneDNN"))
    tr = o.get(("Limit", "Triad"))
    w2 = o.get(("W2", "graph"))
    if sg and w2 and not w2.get("error_occurred"):
        bound = W2_FLOP / (sg["gflops_best"] * 1e9) * 1e3
        r = w2["median_ms"] / bound
        lib = "oneDNN" if sg is o.get(("Limit", "Sgemm1024OneDNN")) else "OpenBLAS"
        lines.append(f"W2 graph vs GEMM lower bound: 257 MFLOP at the SGEMM 1024^3 rate {sg['gflops_best']:.1f} GFLOP/s "
                     f"({lib}, {sg['threads']:.0f} threads) = {bound:.3f} ms; ours {w2['median_ms']:.3f} ms -> {r:.2f}x "
                     f"(target <= {W2_BOUND_TARGET}: {verdict(r, W2_BOUND_TARGET)})")
        summary.append(dict(workload="W2", mode="graph vs GEMM bound", ours_ms=w2["median_ms"], bound_ms=bound,
                            ratio=r, target=W2_BOUND_TARGET, result=verdict(r, W2_BOUND_TARGET)))
        for g, lib in ((w2g, "OpenBLAS"), (w2g_dnnl, "oneDNN")):
            if g:
                lines.append(f"   the 9 W2 GEMMs back to back in {lib}: {g['median_ms']:.3f} ms "
                             f"-> ours / that = {w2['median_ms'] / g['median_ms']:.2f}x")
    for wid, flop in GEMM_FLOP.items():
        g = o.get((wid, "graph"))
        if not sg or not g or g.get("error_occurred") or wid not in pe:
            continue
        bound = flop / (sg["gflops_best"] * 1e9) * 1e3
        pms = pe[wid][0]
        lines.append(f"{wid} vs the SGEMM rate: {flop / 1e6:.0f} MFLOP at {sg['gflops_best']:.1f} GFLOP/s = "
                     f"{bound:.3f} ms; ours (graph) {g['median_ms'] / bound:.2f}x, the peer {pms / bound:.2f}x, "
                     f"graph target {TARGETS[(wid, 'graph')]} x the peer = {TARGETS[(wid, 'graph')] * pms / bound:.2f}x")
        summary.append(dict(workload=wid, mode="graph vs SGEMM rate", ours_ms=g["median_ms"], bound_ms=bound,
                            ratio=g["median_ms"] / bound))
        summary.append(dict(workload=wid, mode="peer vs SGEMM rate", peer_ms=pms, bound_ms=bound,
                            ratio=pms / bound))
    w5 = o.get(("W5", "graph"))
    if tr and w5 and not w5.get("error_occurred"):
        bound = W5_BYTES / (tr["gbs_best"] * 1e9) * 1e3
        lines.append(f"W5 graph vs triad bound: 32 MB at {tr['gbs_best']:.1f} GB/s = {bound:.3f} ms; "
                     f"ours {w5['median_ms']:.3f} ms -> {w5['median_ms'] / bound:.1f}x")
        summary.append(dict(workload="W5", mode="graph vs triad bound", ours_ms=w5["median_ms"], bound_ms=bound,
                            ratio=w5["median_ms"] / bound))
    ws = o.get(("Limit", "W5Stream"))
    if ws and w5 and not w5.get("error_occurred"):
        lines.append(f"W5 graph vs its traffic alone (x * 1.5 + 0.25 over the same 4M floats, Limit/W5Stream): "
                     f"{ws['median_ms']:.3f} ms (min {ws['min_ms']:.3f}); ours {w5['median_ms']:.3f} ms -> "
                     f"{w5['median_ms'] / ws['median_ms']:.1f}x")
        summary.append(dict(workload="W5", mode="graph vs W5Stream", ours_ms=w5["median_ms"],
                            bound_ms=ws["median_ms"], ratio=w5["median_ms"] / ws["median_ms"]))
    # Issue 7's W5 targets: fused >= 3x faster than unfused graph mode, >= 5x faster than the peer.
    w5n = o.get(("W5", "graph-nofuse"))
    if w5 and w5n and not w5.get("error_occurred") and not w5n.get("error_occurred"):
        speedup = w5n["median_ms"] / w5["median_ms"]
        line = (f"W5 fused vs unfused: {w5n['median_ms']:.3f} / {w5['median_ms']:.3f} ms = {speedup:.2f}x "
                f"(target >= {W5_FUSED_TARGET}: {'pass' if speedup >= W5_FUSED_TARGET else 'MISS'})")
        if "W5" in pe:
            vs_peer = pe["W5"][0] / w5["median_ms"]
            line += (f"; vs the peer's best eager {pe['W5'][0]:.3f} ms = {vs_peer:.2f}x "
                     f"(target >= {W5_PEER_TARGET}: {'pass' if vs_peer >= W5_PEER_TARGET else 'MISS'})")
        lines.append(line)
        summary.append(dict(workload="W5", mode="fused vs unfused", ours_ms=w5["median_ms"],
                            unfused_ms=w5n["median_ms"], speedup=speedup, target=W5_FUSED_TARGET))
    return "\n".join(lines), summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build dir holding bin/bench_workloads")
    ap.add_argument("--peer", default=PEER, help="the PyTorch peer script")
    ap.add_argument("--only", default="", help="comma list of workloads, e.g. W2,W5")
    ap.add_argument("--quick", action="store_true", help="fewer runs on both sides (smoke test)")
    ap.add_argument("--quiet-wait", type=float, default=60,
                    help="max seconds to wait for an idle machine before each measurement (peer: per workload)")
    ap.add_argument("--interleave", action=argparse.BooleanOptionalAction, default=True,
                    help="run peer and ours workload by workload (default), not all of one side first")
    ap.add_argument("--no-run", action="store_true", help="only print the table of --ours-json and --peer-json")
    ap.add_argument("--ours-json", help="with --no-run: our Google Benchmark JSON")
    ap.add_argument("--peer-json", help="with --no-run: the peer's JSON (torch_workloads.py --out)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved rounds; the summary gives each ratio's median and min-max over them")
    ap.add_argument("--out", help="write the table rows and both raw results as JSON")
    ap.add_argument("--blas-kernels", choices=("env", "native"), default="env",
                    help="env (default): both sides run OpenBLAS as the environment sets it up; native: "
                         "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from both sides' environment, so "
                         "OpenBLAS picks its kernels for this CPU (where a machine pins older kernels, the "
                         "GEMM limit both sides are held to is then the CPU's own)")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit(f"compare.py: --rounds must be at least 1, got {a.rounds}")
    env = dict(os.environ, OMP_NUM_THREADS=THREADS, OPENBLAS_NUM_THREADS=THREADS)
    if a.blas_kernels == "native":
        for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            env.pop(var, None)
    # Where OpenBLAS falls back to its SSE3 kernels on a CPU it does not know, both sides get the
    # kernels Spora's backend re-selects (the peer's openblas_fallback_fix).
    sys.path.insert(0, os.path.join(HERE, "peer"))
    from torch_workloads import openblas_core, openblas_fallback_fix
    env.update(openblas_fallback_fix(env))
    print(f"# OpenBLAS kernels ({a.blas_kernels}): OPENBLAS_CORETYPE="
          f"{env.get('OPENBLAS_CORETYPE', '(unset)')} on both sides; OpenBLAS runs "
          f"{openblas_core(env)}", flush=True)
    rounds = []
    for i in range(1 if a.no_run else a.rounds):
        if a.no_run:
            ours, peer = json.load(open(a.ours_json)), json.load(open(a.peer_json))
        else:
            ours, peer = run_all(a, env)
        text, summary = print_report(ours, peer)
        ctx = ours.get("context", {})
        print(f"# round {i + 1} of {a.rounds}: {time.strftime('%Y-%m-%d %H:%M')} on {ctx.get('host_name', '?')}, "
              f"{ctx.get('num_cpus', '?')} cpus; threads {THREADS} (ours: OMP/OPENBLAS_NUM_THREADS; peer: "
              f"torch.set_num_threads)", flush=True)
        print(text, flush=True)
        rounds.append(dict(rows=summary, ours=ours, peer=peer))
    rows = aggregate([r["rows"] for r in rounds])
    if len(rounds) > 1:
        print(f"# over {len(rounds)} interleaved rounds: median ratio (min-max)")
        print(aggregate_table(rows))
    if a.out:
        sys.path.insert(0, os.path.join(HERE, "suite"))
        import machine  # benchmarks/suite/machine.py
        with open(a.out, "w") as f:
            json.dump(dict(rows=rows, rounds=rounds, ours=rounds[-1]["ours"], peer=rounds[-1]["peer"],
                           machine=machine.describe(ROOT, a.build), blas_kernels=a.blas_kernels,
                           openblas_coretype=env.get("OPENBLAS_CORETYPE"),
                           command=" ".join([os.path.basename(sys.executable)] + sys.argv)), f, indent=1)
        print(f"# wrote {a.out}")


def aggregate(per_round):
    """One row per (workload, mode) over the rounds' rows: medians of the times, the ratio's
    median, min, max and every value; target and result judged on the median."""
    by = {}
    for rows in per_round:
        for r in rows:
            by.setdefault((r["workload"], r["mode"]), []).append(r)
    out = []
    for (wid, mode), rs in by.items():
        row = dict(workload=wid, mode=mode, rounds=len(rs))
        for key in ("ours_ms", "peer_ms", "bound_ms", "unfused_ms"):
            vals = [r[key] for r in rs if r.get(key) is not None]
            if vals:
                row[key] = median(vals)
        ratios = [r["ratio"] for r in rs if r.get("ratio") is not None]
        if not ratios and all(r.get("speedup") is not None for r in rs):
            ratios = [r["speedup"] for r in rs]
            row["speedup"] = median(ratios)
        if ratios:
            row.update(ratio=median(ratios), ratio_median=median(ratios), ratio_min=min(ratios),
                       ratio_max=max(ratios), ratios=ratios)
        target = rs[0].get("target")
        row["target"] = target
        if target is not None and ratios and "speedup" not in row:
            row["result"] = verdict(row["ratio_median"], target)
        elif target is not None and "speedup" in row:
            row["result"] = "pass" if row["speedup"] >= target else "MISS"
        out.append(row)
    return out


def aggregate_table(rows):
    hdr = f"{'workload':<8} {'mode':<22} {'ours ms':>9} {'peer ms':>9} {'ratio':>6} {'min-max':>13} {'target':>8} {'result':>6}"
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        if "ratio_median" not in r:
            continue
        peer = f"{r['peer_ms']:.3f}" if "peer_ms" in r else "-"
        ours = f"{r['ours_ms']:.3f}" if "ours_ms" in r else "-"
        tgt = r.get("target")
        sign = ">=" if "speedup" in r else "<="
        lines.append(f"{r['workload']:<8} {r['mode']:<22} {ours:>9} {peer:>9} "
                     f"{r['ratio_median']:>6.2f} {r['ratio_min']:>6.2f}-{r['ratio_max']:<6.2f} "
                     f"{(sign + ' ' + format(tgt, '.1f')) if tgt is not None else '-':>8} {r.get('result', '-'):>6}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
