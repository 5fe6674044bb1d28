"""The suite's groups. Each is a function (ctx) -> list of figures that raises Skip when what it
needs is absent; ctx (bench.Context) carries the build folder, the report's raw folder, the
rounds and the quick / tiny switches, and records every command it runs.

Targets name their source: issue 21 ("Ahead of PyTorch on every CPU workload", the targets of
the workloads), the headers of benchmarks/bench_autodiff.cpp and bench_frontend.cpp, and the
tolerance of tests/sim/data/published.yaml and papers/megatron_sc21 (10%).
"""
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import gbench
from figures import figure, paired_ratio, target


class Skip(Exception):
    """The group cannot run here; the message says why."""


ISSUE21 = "issue 21 (median over rounds against PyTorch's best eager configuration)"


# ------------------------------------------------------------------ workloads (W1-W6 vs PyTorch)

def torch_python():
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    return None


def workloads(ctx):
    py = torch_python()
    if py is None:
        raise Skip("PyTorch is not importable (by this python3 nor /usr/bin/python3), so the peer "
                   "cannot run: on Debian 12 `apt-get install python3-torch`, elsewhere `pip install torch`")
    rounds = []
    # compare.py --quick alone takes minutes (the peer's three environments), so --quick runs
    # one round of it.
    n = 1 if ctx.quick else ctx.rounds
    if n != ctx.rounds:
        ctx.note(f"--quick: 1 round of compare.py --quick, not {ctx.rounds}")
    for i in range(n):
        out = os.path.join(ctx.raw, f"workloads_round{i + 1}.json")
        cmd = [py, os.path.join(ctx.root, "benchmarks", "compare.py"), "--build", ctx.build,
               "--out", out, "--quiet-wait", "5" if ctx.quick else "60"]
        if ctx.quick:
            cmd.append("--quick")
        ctx.run(cmd)
        with open(out) as f:
            rounds.append(json.load(f))
    return workload_figures(rounds)


WORKLOAD_GRAPH_TARGETS = {"W1": 0.8, "W2": 0.8, "W3": 0.8, "W4": 0.8, "W5": 0.2}


def workload_figures(rounds):
    """Figures from compare.py --out files, one per round (issue 21's targets)."""
    by = {}
    for r in rounds:
        for row in r["rows"]:
            by.setdefault((row["workload"], row["mode"]), []).append(row)
    figs = []
    for (wid, mode), rows in sorted(by.items()):
        if mode in ("graph", "graph-nofuse", "eager"):
            figs.append(figure(f"workloads/{wid}/{mode}/time", "ms", [r["ours_ms"] for r in rows]))
            figs.append(figure(f"workloads/{wid}/{mode}/peer_time", "ms", [r["peer_ms"] for r in rows],
                               note="PyTorch, best eager configuration"))
            tgt = None
            if mode == "graph" and wid in WORKLOAD_GRAPH_TARGETS:
                tgt = target("<=", WORKLOAD_GRAPH_TARGETS[wid], ISSUE21)
            elif mode == "eager":
                tgt = target("<=", 1.1, ISSUE21)
            figs.append(figure(f"workloads/{wid}/{mode}/vs_peer", "x", [r["ratio"] for r in rows],
                               kind="vs_peer", tgt=tgt, note="ours / PyTorch best eager"))
        elif mode == "graph vs GEMM bound":
            figs.append(figure(f"workloads/{wid}/graph/vs_gemm_bound", "x", [r["ratio"] for r in rows],
                               kind="vs_limit", tgt=target("<=", 1.3, ISSUE21),
                               note="ours / (257 MFLOP at the SGEMM 1024^3 rate)"))
        elif mode == "graph vs triad bound":
            figs.append(figure(f"workloads/{wid}/graph/vs_triad_bound", "x", [r["ratio"] for r in rows],
                               kind="vs_limit", note="ours / (32 MB at the STREAM triad rate)"))
    # W6 against the peer's fastest variant (nn.RNN's C++ loop), fused against unfused.
    w6 = [(row["ours_ms"], _fastest_peer(r, "W6")) for r in rounds for row in r["rows"]
          if row["workload"] == "W6" and row["mode"] == "graph"]
    if w6:
        figs.append(figure("workloads/W6/graph/vs_peer_fastest", "x", [o / p for o, p in w6],
                           kind="vs_peer", tgt=target("<=", 1.0, ISSUE21),
                           note="ours / the peer's fastest variant of any mode"))
    for wid in sorted({w for w, _ in by}):
        g, n = by.get((wid, "graph")), by.get((wid, "graph-nofuse"))
        if g and n:
            figs.append(figure(f"workloads/{wid}/fused_vs_unfused", "x",
                               paired_ratio([r["ours_ms"] for r in g], [r["ours_ms"] for r in n]),
                               tgt=target("<=", 1.0, ISSUE21 + ": fused never slower than unfused"),
                               note="fused / unfused graph-mode step time"))
    return figs


def _fastest_peer(compare_out, wid):
    return min(r["median_ms"] for r in compare_out["peer"]["results"] if r["workload"].split()[0] == wid)


# ------------------------------------------------------------------ ad (bench_autodiff)

def ad(ctx):
    if ctx.tiny:
        filt, min_time = r"^(BM_LoopBackwardMemory/(8|16)|BM_CheckpointMemory/[01]/1|BM_CompileMlp100)(/|$)", 0.01
    elif ctx.quick:
        filt, min_time = (r"^(BM_(Forward|ValueAndGrad)_(MLP|LeNet)|BM_LoopBackwardMemory|"
                          r"BM_CheckpointMemory|BM_CompileMlp100)(/|$)"), 0.1
    else:
        filt, min_time = None, None
    data = ctx.gbench("bench_autodiff", filt, min_time)
    s = gbench.samples(data)
    figs = []
    for name, runs in sorted(s.items()):
        tgt = target("<=", 2000.0, "bench_autodiff.cpp header: lowering + AD of a 100-layer MLP "
                     "under 2 s") if name == "BM_CompileMlp100" else None
        figs.append(figure(f"ad/{name}/time", "ms", gbench.times_ms(runs), tgt=tgt))
        if gbench.counter(runs, "peak_MB"):
            figs.append(figure(f"ad/{name}/peak_memory", "MB", gbench.counter(runs, "peak_MB")))
    for net in ("MLP", "LeNet", "Transformer"):
        fwd, vg = s.get(f"BM_Forward_{net}"), s.get(f"BM_ValueAndGrad_{net}")
        if fwd and vg:
            figs.append(figure(f"ad/{net}/grad_over_forward", "x",
                               paired_ratio(gbench.times_ms(vg), gbench.times_ms(fwd)),
                               tgt=target("<=", 3.0, "bench_autodiff.cpp header (reference "
                                          "interpreter): cheap-gradient principle <= 5, target <= 3"),
                               note="value_and_grad time / forward time"))
    for order, suffix, what in ((1, "", "grad"), (2, "_grad_of_grad", "grad of grad")):
        c0 = s.get(f"BM_CheckpointMemory/0/{order}")
        c1 = s.get(f"BM_CheckpointMemory/1/{order}")
        if c0 and c1:
            figs.append(figure(f"ad/checkpoint/memory_ratio{suffix}", "x",
                               paired_ratio(gbench.counter(c1, "peak_MB"), gbench.counter(c0, "peak_MB")),
                               note=f"peak memory of {what} with @checkpoint / without, 8 blocks"))
    return figs


# ------------------------------------------------------------------ frontend (bench_frontend)

def frontend(ctx):
    min_time = 0.01 if ctx.tiny else 0.2 if ctx.quick else None
    data = ctx.gbench("bench_frontend", r"^BM_FrontEnd/", min_time)
    figs = []
    for name, runs in sorted(gbench.samples(data).items()):
        lines = int(gbench.counter(runs, "lines")[0])
        figs.append(figure(f"frontend/{name}/time", "ms", gbench.times_ms(runs),
                           tgt=target("<=", 1000.0, "bench_frontend.cpp header: parse + check + "
                                      "lower of a 5,000-line program well under a second"),
                           note=f"parse + check + lower of {lines} generated lines"))
        figs.append(figure(f"frontend/{name}/lines_per_second", "lines/s",
                           [lines / (t / 1e3) for t in gbench.times_ms(runs)], better="higher",
                           note="over wall time (the benchmark's own counter divides by CPU time)"))
    return figs


# ------------------------------------------------------------------ search (bench_search)

def search(ctx):
    if ctx.tiny:
        filt, min_time = r"^(BM_DpSmall/3|BM_PropagateTransformer24/3)(/|$)", 0.01
    elif ctx.quick:
        filt, min_time = (r"^(BM_DpTransformer24/(3|6|9)|BM_PropagateTransformer24/(3|6|9)|"
                          r"BM_DpSmall/(3|6)|BM_RecTransformer24/(3|6|9)|BM_DpStep/w4_2x2)(/|$)"), 0.1
    else:
        filt, min_time = None, None
    data = ctx.gbench("bench_search", filt, min_time)
    figs = []
    for name, runs in sorted(gbench.samples(data).items()):
        note = None
        if gbench.counter(runs, "devices"):
            note = f"{int(gbench.counter(runs, 'devices')[0])} devices"
        figs.append(figure(f"search/{name}/time", "ms", gbench.times_ms(runs), note=note))
    return figs


# ------------------------------------------------------------------ collectives vs Open MPI

def collectives(ctx):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if mpirun is None:
        raise Skip("no mpirun: the collectives run on MPI ranks against Open MPI's own collectives "
                   "(apt-get install openmpi-bin)")
    ranks = ctx.ranks
    sizes = [65536, 1048576] if ctx.tiny else [65536, 1048576, 16777216] if ctx.quick else \
        [1024 * 4 ** k for k in range(9)]
    filt = (rf"^mpi{ranks}/(all-reduce|all-gather)/(native|ring)/bytes:("
            + "|".join(str(s) for s in sizes) + ")(/|$)")
    prefix = [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)]
    data = ctx.gbench("bench_collectives", filt, None, prefix=prefix)
    s = gbench.samples(data)
    figs = []
    for op in ("all-reduce", "all-gather"):
        mpi_name = {"all-reduce": "MPI_Allreduce", "all-gather": "MPI_Allgather"}[op]
        for size in sizes:
            ring = s.get(f"mpi{ranks}/{op}/ring/bytes:{size}")
            native = s.get(f"mpi{ranks}/{op}/native/bytes:{size}")
            if not ring or not native:
                continue
            key = f"collectives/{op}/{_size(size)}"
            ours_bw = gbench.counter(ring, "busbw_GBps")
            mpi_bw = gbench.counter(native, "busbw_GBps")
            figs.append(figure(f"{key}/ring_busbw", "GB/s", ours_bw, better="higher",
                               note=f"ours (ring schedule) on {ranks} MPI ranks"))
            figs.append(figure(f"{key}/mpi_busbw", "GB/s", mpi_bw, better="higher",
                               note=f"Open MPI's {mpi_name} on the same ranks"))
            figs.append(figure(f"{key}/vs_mpi", "x", paired_ratio(ours_bw, mpi_bw), better="higher",
                               kind="vs_peer", note=f"ring busBw / {mpi_name} busBw"))
            mem = gbench.counter(ring, "mem_bw_GBps")
            if mem and mem[0] > 0:
                figs.append(figure(f"{key}/vs_memory_bandwidth", "x", paired_ratio(ours_bw, mem),
                                   better="higher", kind="vs_limit",
                                   note="ring busBw / the machine's STREAM copy bandwidth"))
    if not figs:
        raise RuntimeError(f"bench_collectives reported none of {filt}: {gbench.errors(data) or 'no runs'}")
    return figs


def _size(n):
    for unit, b in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= b:
            return f"{n // b}{unit}"
    return f"{n}B"


# ------------------------------------------------------------------ sim (published anchors)

def load_paper(root, name):
    path = os.path.join(root, "papers", name, "run.py")
    spec = importlib.util.spec_from_file_location(f"paper_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sim(ctx):
    spora = ctx.spora()
    figs = []
    mega = load_paper(ctx.root, "megatron_sc21")
    rows = mega.ROWS[:2] if ctx.tiny else mega.ROWS
    for row in rows:
        cmd, r = ctx.timed(lambda: mega.sim_gpt(spora, row, mega.row_flags(row)),
                           f"spora sim-gpt, Megatron-LM table 1 row {row[0]}")
        figs.append(figure(f"sim/megatron/{row[0]}/tflops_per_gpu", "TFLOP/s", [r["tflops_per_gpu"]],
                           better="higher", note=f"{row[6]} GPUs; paper {row[8]}; deterministic: one run"))
        figs.append(figure(f"sim/megatron/{row[0]}/vs_paper", "x", [r["tflops_per_gpu"] / row[8]],
                           better="higher", kind="vs_published",
                           tgt=target("within", 0.10, "Narayanan et al. SC'21 table 1 "
                                      "(papers/megatron_sc21): within 10%")))
    try:
        nccl = load_paper(ctx.root, "nccl_tests")
    except ImportError as e:
        ctx.note(f"nccl-tests anchors skipped: papers/nccl_tests/run.py needs {e.name} "
                 "(apt-get install python3-yaml)")
        return figs
    import yaml  # present: nccl_tests/run.py imported it
    with open(os.path.join(ctx.root, "tests/sim/data/published.yaml")) as f:
        entries = yaml.safe_load(f)
    for e in entries[:1] if ctx.tiny else entries:
        size = nccl.parse_size(e["size"])
        run = ctx.timed(lambda: nccl.sim_coll(spora, e, f"{size}:{size}"),
                        f"spora sim-coll, {e['system']}")
        ours, pub = nccl.busbw_at(run, size), nccl.parse_gbps(e["busbw"])
        key = f"sim/nccl/{e['cluster'].split('/')[-1][:-5]}-{e['ranks']}"
        figs.append(figure(f"{key}/busbw", "GB/s", [ours], better="higher",
                           note=f"{e['system']}, all-reduce ring at {e['size']}; published {pub:g}; "
                                "deterministic: one run"))
        figs.append(figure(f"{key}/vs_published", "x", [ours / pub], better="higher",
                           kind="vs_published",
                           tgt=target("within", float(e["tolerance"]), "tests/sim/data/published.yaml "
                                      "(nccl-tests busBw, sources there)")))
    return figs


# ------------------------------------------------------------------ simscale (sim_scaling.sh)

def simscale(ctx):
    spora = ctx.spora()
    top = 16 if ctx.tiny else 32 if ctx.quick else 1024
    script = os.path.join(ctx.root, "benchmarks", "sim", "sim_scaling.sh")
    per = {}
    for _ in range(ctx.rounds):
        out = ctx.run([script, spora, str(top)], capture=True)
        for line in out.splitlines():
            f = line.split()
            if len(f) == 9 and f[0].isdigit():
                per.setdefault(int(f[0]), []).append(
                    {"model": f[1], "step_ms": float(f[2]), "events": int(f[3]), "sim_cpu": float(f[5]),
                     "total": float(f[6]), "events_per_cpu_s": float(f[8])})
    if not per:
        raise RuntimeError(f"{script} printed no rows")
    figs = []
    for devices, rows in sorted(per.items()):
        key = f"simscale/{devices}"
        note = f"{rows[0]['model']} model, {rows[0]['events']} events"
        figs.append(figure(f"{key}/sim_cpu", "s", [r["sim_cpu"] for r in rows], note=note))
        figs.append(figure(f"{key}/command_wall", "s", [r["total"] for r in rows],
                           note="the whole spora sim command (compiles and differentiates too)"))
        figs.append(figure(f"{key}/events_per_cpu_s", "events/s", [r["events_per_cpu_s"] for r in rows],
                           better="higher"))
    return figs


GROUPS = {"workloads": workloads, "ad": ad, "frontend": frontend, "collectives": collectives,
          "sim": sim, "search": search, "simscale": simscale}
# What each group builds (ninja targets).
TARGETS = {"workloads": ["bench_workloads"], "ad": ["bench_autodiff"], "frontend": ["bench_frontend"],
           "collectives": ["bench_collectives"], "sim": ["spora_cli"], "search": ["bench_search"],
           "simscale": ["spora_cli"]}
