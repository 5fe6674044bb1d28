#!/usr/bin/env python3
"""PyTorch's side of the reference workloads W1-W6 (benchmarks/workloads/README.md).

Times every selected workload in eager PyTorch, plus the TorchScript and nn.RNN variants that
are shown for information, with 2 threads, once in each process environment of ENVIRONMENTS
(each in a fresh process: the settings act when OpenMP and glibc start). Prints a table and
writes one JSON file, which benchmarks/compare.py reads:

    {"info": {environment: {...}},
     "results": [{"workload": "W2 ...", "mode": "eager", "config": environment,
                  "median_ms": ..., "min_ms": ..., "runs": ..., "warmup": ...,
                  "bg_load": ..., "steal": ..., "pre_wait_s": ...}, ...]}

A workload's first word is its id; the peer's figure for it is the fastest median among the
rows whose mode starts with "eager". bg_load is the CPU (in cores) that other processes used
while the row was timed: above about 0.15 the row is contaminated.

Usage:  python3 benchmarks/peer/torch_workloads.py [--only W2,W5] [--quick] [--out peer.json]
                [--configs default,omp-passive] [--quiet-wait 300]
Needs PyTorch for the Python that runs it: `apt-get install python3-torch` (Debian 12's
PyTorch 1.13.1) or `pip install torch`.
"""
import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

THREADS = 2
ENVIRONMENTS = {
    "default": {},
    "omp-passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "omp-passive+no-mmap": {"OMP_WAIT_POLICY": "PASSIVE",
                            "MALLOC_MMAP_THRESHOLD_": "1073741824",
                            "MALLOC_TRIM_THRESHOLD_": "1073741824"},
}


def openblas_core(env):
    """The kernels libopenblas selects in `env` (openblas_get_corename), or '?'."""
    probe = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
             "l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())")
    try:
        r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def openblas_fallback_fix(env):
    """{"OPENBLAS_CORETYPE": kernels} where OpenBLAS does not know this CPU, else {}.

    OpenBLAS 0.3.21 falls back to its SSE3 kernels ("Prescott") on CPUs newer than it, such as
    a Xeon of family 6 model 207 under KVM. Spora's CPU backend then re-selects the AVX-512
    (SkylakeX) or AVX2 (Haswell) kernels (backends/cpu/blas.cpp, configure_blas); the peer gets
    the same kernels through OPENBLAS_CORETYPE, so that both sides run the GEMMs this CPU is
    capable of. Nothing changes where `env` sets OPENBLAS_CORETYPE or OpenBLAS knows the CPU.
    """
    if env.get("OPENBLAS_CORETYPE") or openblas_core(env) != "Prescott":
        return {}
    try:
        flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo")
                      if line.startswith("flags")), [])
    except OSError:
        return {}
    if all(f in flags for f in ("avx512f", "avx512dq", "avx512bw", "avx512vl")):
        return {"OPENBLAS_CORETYPE": "SkylakeX"}
    if "avx2" in flags and "fma" in flags:
        return {"OPENBLAS_CORETYPE": "Haswell"}
    return {}


INSTALL_HINT = ("torch_workloads.py: {python} cannot import torch. On Debian: apt-get install "
                "python3-torch (then run it with /usr/bin/python3); elsewhere: {python} -m pip install torch")

# Bound by import_torch() in the measuring process only, so that --help and the parent process
# work without PyTorch.
torch = nn = F = None


def import_torch():
    global torch, nn, F
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


# ------------------------------------------------------------------ CPU accounting

def machine_cpu_seconds():
    """(busy, stolen) CPU seconds of the whole machine, all processors, from /proc/stat."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def own_cpu_seconds():
    t = os.times()
    return t.user + t.system


class OtherLoad:
    """Over a with-block: `cores`, the CPU other processes used, and `steal`, the CPU the
    hypervisor took, both as average cores."""

    def __enter__(self):
        self._wall = time.perf_counter()
        self._busy, self._steal = machine_cpu_seconds()
        self._own = own_cpu_seconds()
        return self

    def __exit__(self, *exc):
        busy, steal = machine_cpu_seconds()
        wall = max(time.perf_counter() - self._wall, 1e-9)
        self.cores = max(0.0, ((busy - self._busy) - (own_cpu_seconds() - self._own)) / wall)
        self.steal = (steal - self._steal) / wall
        return False


def wait_until_idle(limit_s, below=0.10):
    """Sleeps until the machine uses under `below` cores in two 1-second samples in a row, or
    until limit_s has passed; returns the seconds waited."""
    start, calm = time.time(), 0
    while calm < 2 and time.time() - start < limit_s:
        busy0, _ = machine_cpu_seconds()
        t0 = time.perf_counter()
        time.sleep(1.0)
        busy1, _ = machine_cpu_seconds()
        calm = calm + 1 if (busy1 - busy0) / (time.perf_counter() - t0) < below else 0
    return time.time() - start


def time_step(step, warmup, runs):
    for _ in range(warmup):
        step()
    seconds = []
    with OtherLoad() as load:
        for _ in range(runs):
            t0 = time.perf_counter()
            step()
            seconds.append(time.perf_counter() - t0)
    ms = [s * 1e3 for s in seconds]
    return dict(median_ms=statistics.median(ms), min_ms=min(ms), runs=runs, warmup=warmup,
                bg_load=round(load.cores, 2), steal=round(load.steal, 2))


# ------------------------------------------------------------------ the workloads
# Each build_* returns [(mode, step)]: the step is one timed unit, inputs made beforehand.

def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def lenet5():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def images_and_labels(batch=64):
    return torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))


def sgd_step(net):
    x, labels = images_and_labels()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        F.cross_entropy(net(x), labels).backward()
        opt.step()
    return step


def build_w1():
    net = mlp().eval()
    x, _ = images_and_labels()
    frozen = torch.jit.optimize_for_inference(torch.jit.script(mlp().eval()))
    variants = [("eager", net), ("jit.script", torch.jit.script(net)), ("jit.trace", torch.jit.trace(net, x)),
                ("jit.script+freeze(optimize_for_inference)", frozen)]
    return [(mode, lambda m=m: m(x)) for mode, m in variants]


def build_w2():
    return [("eager", sgd_step(mlp()))]


def build_w3():
    return [("eager", sgd_step(lenet5()))]


def build_w4():
    block = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    x = torch.randn(8, 128, 256, requires_grad=True)
    leaves = list(block.parameters()) + [x]

    def step():
        for t in leaves:
            t.grad = None
        block(x).sum().backward()
    return [("eager", step)]


def w5_chain(x):
    return F.gelu(x * 1.5 + 0.25) * 0.75 + torch.tanh(x)


def build_w5():
    x = torch.randn(4 * 1024 * 1024)
    scripted = torch.jit.script(w5_chain)
    return [("eager", lambda: w5_chain(x)), ("jit.script", lambda: scripted(x))]


def rnn_loop(xs, h, w_ih, w_hh, b_ih, b_hh):  # TorchScript: arguments default to Tensor
    for t in range(xs.size(0)):
        h = torch.tanh(F.linear(xs[t], w_ih, b_ih) + F.linear(h, w_hh, b_hh))
    return h


def build_w6():
    steps, batch, hidden = 50, 32, 256
    cell = nn.RNNCell(hidden, hidden)
    library = nn.RNN(hidden, hidden)  # tanh, one layer, the same weights as the cell
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(library, name + "_l0").copy_(getattr(cell, name))
    xs, h0 = torch.randn(steps, batch, hidden), torch.zeros(batch, hidden)
    scripted = torch.jit.script(rnn_loop)

    def cell_loop():
        h = h0
        for t in range(steps):
            h = cell(xs[t], h)
        return h

    forwards = [("eager", cell_loop, cell),
                ("jit.script (loop)", lambda: scripted(xs, h0, cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                                       cell.bias_hh), cell),
                ("nn.RNN (C++ loop)", lambda: library(xs, h0.unsqueeze(0))[1][0], library)]
    with torch.no_grad():
        reference = cell_loop()
        for mode, forward, _ in forwards[1:]:
            if not torch.allclose(forward(), reference, atol=1e-5):
                raise SystemExit(f"torch_workloads.py: W6 {mode} disagrees with the RNNCell loop")

    def fwd_bwd(forward, module):
        def step():
            for p in module.parameters():
                p.grad = None
            forward().sum().backward()
        return step
    return [(mode, fwd_bwd(forward, module)) for mode, forward, module in forwards]


# id: (name, build, warm-up repetitions, timed repetitions, autograd on while timing)
WORKLOADS = {
    "W1": ("W1 MLP 784-512-512-10 forward B64", build_w1, 50, 2000, False),
    "W2": ("W2 MLP train step B64", build_w2, 30, 500, True),
    "W3": ("W3 LeNet-5 train step B64", build_w3, 20, 200, True),
    "W4": ("W4 Transformer encoder block fwd+bwd", build_w4, 10, 100, True),
    "W5": ("W5 elementwise chain 4M", build_w5, 20, 200, False),
    "W6": ("W6 RNN cell x50 fwd+bwd", build_w6, 10, 100, True),
}


def selected(only):
    ids = [w.strip().upper() for w in only.split(",") if w.strip()] or list(WORKLOADS)
    unknown = [w for w in ids if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"torch_workloads.py: unknown workload {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    return ids


def gemm_gflops(n=1024, repeats=10):
    """The best rate of torch.mm on n x n x n in f32: what the peer's own GEMM reaches here."""
    a, b = torch.rand(n, n), torch.rand(n, n)
    best = float("inf")
    for i in range(repeats + 3):
        t0 = time.perf_counter()
        torch.mm(a, b)
        if i >= 3:
            best = min(best, time.perf_counter() - t0)
    return round(2 * n ** 3 / best / 1e9, 1)


def environment_info():
    info = dict(torch=torch.__version__, python=platform.python_version(), executable=sys.executable,
                threads=torch.get_num_threads(), time=time.strftime("%Y-%m-%d %H:%M:%S"),
                env={k: v for k, v in os.environ.items()
                     if k.startswith(("OMP_", "GOMP", "KMP", "MKL", "OPENBLAS", "MALLOC_"))},
                cpu_capability=[line.strip() for line in torch.__config__.show().splitlines()
                                if "CPU capability" in line])
    try:
        info["jit_can_fuse_on_cpu"] = torch._C._jit_can_fuse_on_cpu()
    except AttributeError:
        pass
    info["mm_1024_gflops_best"] = gemm_gflops()
    return info


def measure(args):
    """The measuring process: one environment, every selected workload."""
    try:
        import_torch()
    except ImportError:
        raise SystemExit(INSTALL_HINT.format(python=sys.executable))
    torch.set_num_threads(THREADS)
    info = environment_info()
    results = []
    for wid in selected(args.only):
        name, build, warmup, runs, grad = WORKLOADS[wid]
        if args.quick:
            runs = max(5, runs // 10)
        torch.manual_seed(0)
        with torch.set_grad_enabled(grad):
            variants = build()
        for mode, step in variants:
            waited = wait_until_idle(args.quiet_wait)
            with torch.set_grad_enabled(grad):
                row = time_step(step, warmup, runs)
            row.update(workload=name, mode=mode, config=args.config, pre_wait_s=round(waited, 1))
            results.append(row)
            print(f"  [{args.config}] {name} / {mode}: {row['median_ms']:.3f} ms (bg {row['bg_load']:.2f})",
                  file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        json.dump(dict(info=info, results=results), f)


def print_summary(info, results):
    for env_name, i in info.items():
        extra = " ".join(f"{k}={v}" for k, v in sorted(i["env"].items())) or "-"
        print(f"# environment {env_name}: PyTorch {i['torch']} under {i['executable']} "
              f"(Python {i['python']}), {i['threads']} threads, {' '.join(i['cpu_capability'])}; "
              f"torch.mm 1024^3 at {i['mm_1024_gflops_best']} GFLOP/s; variables: {extra}")
    # One block per workload, fastest first; "*" marks the peer's figure (fastest eager median).
    columns = ["", "workload", "mode", "environment", "median ms", "min ms", "runs", "bg", ""]
    table = []
    for wid in dict.fromkeys(r["workload"].split()[0] for r in results):
        rows = sorted((r for r in results if r["workload"].split()[0] == wid), key=lambda r: r["median_ms"])
        figure = next((r for r in rows if r["mode"].startswith("eager")), None)
        for r in rows:
            table.append(["*" if r is figure else "", r["workload"], r["mode"], r["config"],
                          f"{r['median_ms']:.3f}", f"{r['min_ms']:.3f}", str(r["runs"]), f"{r['bg_load']:.2f}",
                          "contaminated (other load)" if r["bg_load"] > 0.15 else ""])
    widths = [max(len(row[c]) for row in [columns] + table) for c in range(len(columns))]
    numeric = {4, 5, 6, 7}
    for row in [columns] + table:
        print(" ".join(cell.rjust(w) if c in numeric else cell.ljust(w)
                       for c, (cell, w) in enumerate(zip(row, widths))).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/torch_workloads.json", help="the JSON file to write")
    ap.add_argument("--only", default="", help="comma list of workload ids, e.g. W2,W5 (default: all)")
    ap.add_argument("--quick", action="store_true", help="a tenth of the timed repetitions (smoke test)")
    ap.add_argument("--configs", default=",".join(ENVIRONMENTS),
                    help="comma list of process environments: " + ", ".join(ENVIRONMENTS))
    ap.add_argument("--quiet-wait", type=float, default=float(os.environ.get("QUIET_WAIT", 300)),
                    help="at most this many seconds of waiting for an idle machine before each row")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--config", default="default", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return measure(args)
    selected(args.only)
    environments = [e.strip() for e in args.configs.split(",") if e.strip()]
    unknown = [e for e in environments if e not in ENVIRONMENTS]
    if unknown or not environments:
        ap.error(f"--configs: choose from {', '.join(ENVIRONMENTS)}")
    if importlib.util.find_spec("torch") is None:
        raise SystemExit(INSTALL_HINT.format(python=sys.executable))
    info, results = {}, []
    blas = openblas_fallback_fix(os.environ)
    if blas:
        print(f"# OpenBLAS falls back to its Prescott kernels on this CPU: every environment runs "
              f"OPENBLAS_CORETYPE={blas['OPENBLAS_CORETYPE']}, the kernels Spora re-selects", file=sys.stderr)
    for env_name in environments:
        with tempfile.TemporaryDirectory() as tmp:
            part = os.path.join(tmp, "part.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--config", env_name, "--out", part,
                   "--only", args.only, "--quiet-wait", str(args.quiet_wait)] + (["--quick"] if args.quick else [])
            subprocess.run(cmd, env=dict(os.environ, **blas, **ENVIRONMENTS[env_name]), check=True)
            with open(part) as f:
                data = json.load(f)
        info[env_name] = data["info"]
        results += data["results"]
    print_summary(info, results)
    with open(args.out, "w") as f:
        json.dump(dict(info=info, results=results), f, indent=1)
    print(f"# wrote {args.out}")


if __name__ == "__main__":
    main()
