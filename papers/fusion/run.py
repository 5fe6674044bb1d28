#!/usr/bin/env python3
"""Operator fusion on W2-W5: kernels, memory traffic and step time, fused against unfused
(papers/fusion/README.md).

    python3 papers/fusion/run.py [--build build] [--rounds 3]

Runs bench_workloads --benchmark_filter='^W[2-5]/graph' (fused and graph-nofuse) with
`rounds` repetitions at 2 threads, and `spora run --stats` on W5 with and without --no-fuse;
writes results.json, results.md and plot.svg next to this script. Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from study import cpu_model, write_json, write_svg, write_text  # noqa: E402
IDS = ["W2", "W3", "W4", "W5"]
NAMES = {"W2": "MLP train step", "W3": "LeNet-5 train step", "W4": "Transformer block fwd+bwd",
         "W5": "elementwise chain, 4M floats"}
TVM = (1.2, 2.0)  # Chen et al. OSDI'18, section 3 / figure 4 (Titan X): fused vs non-fused


def bench(build, rounds, env):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        out = t.name
    cmd = [os.path.join(build, "bin", "bench_workloads"), "--benchmark_filter=^W[2-5]/graph",
           f"--benchmark_repetitions={rounds}", f"--benchmark_out={out}", "--benchmark_out_format=json"]
    print("# " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    return " ".join(["bench_workloads"] + cmd[1:3]), data


def stats_w5(build, env):
    w5 = os.path.join(ROOT, "benchmarks", "workloads", "w5_elementwise_chain.sp")
    out = {}
    for label, extra in (("fused", []), ("unfused", ["--no-fuse"])):
        cmd = [os.path.join(build, "bin", "spora"), "run", w5, "--stats"] + extra
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        out[label] = {"command": "spora run benchmarks/workloads/w5_elementwise_chain.sp --stats "
                                 + " ".join(extra),
                      "stats": [l for l in r.stderr.splitlines() if l.startswith("stats:")]}
    return out


def figures(data):
    per = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        wid, mode = b["run_name"].split("/")[:2]
        per.setdefault((wid, mode), []).append(b)
    rows = {}
    for wid in IDS:
        f, n = per.get((wid, "graph")), per.get((wid, "graph-nofuse"))
        if not f or not n:
            sys.exit(f"run.py: bench_workloads reported no {wid}/graph or {wid}/graph-nofuse run")
        fm, nm = [b["median_ms"] for b in f], [b["median_ms"] for b in n]
        fc, nc = [b["cpu_ms"] for b in f], [b["cpu_ms"] for b in n]
        rows[wid] = {"kernels_fused": f[0]["kernels"], "kernels_unfused": n[0]["kernels"],
                     "traffic_mb_fused": f[0]["traffic_MB"], "traffic_mb_unfused": n[0]["traffic_MB"],
                     "ms_fused": statistics.median(fm), "ms_fused_range": [min(fm), max(fm)],
                     "ms_unfused": statistics.median(nm), "ms_unfused_range": [min(nm), max(nm)],
                     "speedup_per_round": [u / x for u, x in zip(nm, fm)],
                     "cpu_ms_fused": statistics.median(fc), "cpu_ms_unfused": statistics.median(nc),
                     "cpu_speedup_per_round": [u / x for u, x in zip(nc, fc)],
                     "bg_load": max(b["bg_load"] for b in f + n)}
        rows[wid]["speedup"] = statistics.median(rows[wid]["speedup_per_round"])
        rows[wid]["cpu_speedup"] = statistics.median(rows[wid]["cpu_speedup_per_round"])
    return rows


def svg_plot(rows, path):
    w, h, left, top, ph = 760, 330, 70, 50, 220
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="20" y="20" font-size="13">fused / unfused per workload: memory traffic (IR count) and '
           'step time (median of rounds); 1 = no change</text>']
    bar, gap = 26, 60
    Y = lambda v: top + ph * (1 - min(v, 1.2) / 1.2)
    for k in range(0, 7):
        v = k * 0.2
        out.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{w - 20}" y2="{Y(v):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    for i, wid in enumerate(IDS):
        r = rows[wid]
        x0 = left + 20 + i * (2 * bar + gap)
        for j, (v, color, label) in enumerate(((r["traffic_mb_fused"] / r["traffic_mb_unfused"], "#7f9cc0", "traffic"),
                                               (r["ms_fused"] / r["ms_unfused"], "#d35400", "time"))):
            out.append(f'<rect x="{x0 + j * bar}" y="{Y(v):.1f}" width="{bar - 3}" height="{Y(0) - Y(v):.1f}" '
                       f'fill="{color}"><title>{wid} {label}: {v:.3f}</title></rect>'
                       f'<text x="{x0 + j * bar + bar / 2 - 1}" y="{Y(v) - 4:.1f}" text-anchor="middle" '
                       f'font-size="10">{v:.2f}</text>')
        out.append(f'<text x="{x0 + bar}" y="{top + ph + 16}" text-anchor="middle">{wid}</text>')
    out.append(f'<line x1="{left}" y1="{Y(1):.1f}" x2="{w - 20}" y2="{Y(1):.1f}" stroke="#555" stroke-dasharray="4,3"/>')
    for i, (color, label) in enumerate((("#7f9cc0", "memory traffic, fused / unfused"),
                                        ("#d35400", "step time, fused / unfused"))):
        out.append(f'<rect x="{left + 260 * i}" y="{h - 22}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{left + 14 + 260 * i}" y="{h - 13}">{label}</text>')
    write_svg(path, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--from-json", action="store_true",
                    help="rebuild results.md and plot.svg from the measurements in results.json (no run)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    if args.from_json:
        with open(os.path.join(HERE, "results.json")) as f:
            old = json.load(f)
        cmd, data, w5_stats = old["command"], old["bench_workloads"], old["w5_stats"]
    else:
        cmd, data = bench(build, args.rounds, env)
        w5_stats = stats_w5(build, env)
    rows = figures(data)
    lines = ["| workload | kernels unfused | kernels fused | traffic unfused (MB) | traffic fused (MB) | traffic saved "
             "| step unfused (ms) | step fused (ms) | speedup unfused / fused (min-max of rounds) "
             "| CPU ms per step unfused | fused | speedup by CPU time (min-max) | bg load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for wid in IDS:
        r = rows[wid]
        lines.append(f"| {wid} {NAMES[wid]} | {r['kernels_unfused']:.0f} | {r['kernels_fused']:.0f} | "
                     f"{r['traffic_mb_unfused']:.1f} | {r['traffic_mb_fused']:.1f} | "
                     f"{100 * (1 - r['traffic_mb_fused'] / r['traffic_mb_unfused']):.0f}% | "
                     f"{r['ms_unfused']:.2f} | {r['ms_fused']:.2f} | {r['speedup']:.2f}x "
                     f"({min(r['speedup_per_round']):.2f}-{max(r['speedup_per_round']):.2f}) | "
                     f"{r['cpu_ms_unfused']:.2f} | {r['cpu_ms_fused']:.2f} | {r['cpu_speedup']:.2f}x "
                     f"({min(r['cpu_speedup_per_round']):.2f}-{max(r['cpu_speedup_per_round']):.2f}) | {r['bg_load']:.2f} |")
    lines += ["", f"TVM (OSDI'18, figure 4, NVIDIA Titan X): fused operators {TVM[0]}x to {TVM[1]}x faster.", "",
              "`spora run --stats` on W5:", ""]
    for label, s in w5_stats.items():
        lines.append(f"- {label} (`{s['command']}`): " + "; ".join(l[len('stats: '):] for l in s["stats"]
                                                                  if "fusion" in l or "ran in" in l))
    cpu = cpu_model()
    ctx = data.get("context", {})
    header = (f"Generated by `python3 papers/fusion/run.py --rounds {args.rounds}` on {cpu} ({os.cpu_count()} cores, "
              f"2 threads; load average {ctx.get('load_avg', '?')} at the start of bench_workloads); "
              f"`{cmd}`.\n\n")
    table = "\n".join(lines) + "\n"
    write_text(os.path.join(HERE, "results.md"), "<!-- written by papers/fusion/run.py; do not edit -->\n" + header + table)
    write_json(os.path.join(HERE, "results.json"), {"cpu": cpu, "cores": os.cpu_count(), "command": cmd, "rows": rows, "w5_stats": w5_stats,
                   "tvm_speedup_range": TVM, "bench_workloads": data})
    svg_plot(rows, os.path.join(HERE, "plot.svg"))
    print(header + table, end="")


if __name__ == "__main__":
    main()
