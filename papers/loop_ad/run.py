#!/usr/bin/env python3
"""Loop AD by source transformation (graph mode) against a tape (eager mode) as the trip count
grows (papers/loop_ad/README.md).

    python3 papers/loop_ad/run.py [--spora build/bin/spora] [--rounds 3] [--trips 16,64,256,1024]

For each trip count n and mode it runs `spora run p.sp --stats` (graph) or `--mode eager --stats`
in a fresh process `rounds` times, parses the stats lines, and writes results.json, results.md
and plot.svg next to this script. Standard library only.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from study import cpu_model, write_json, write_svg, write_text  # noqa: E402

PROGRAM = """def f(h0, w) {{
    var h = h0
    for i in range({n}) {{
        h = tanh(h @ w)
    }}
    return sum(h)
}}

def main() {{
    let w = normal(shape=(256, 256), seed=1) * 0.05
    let h0 = normal(shape=(64, 256), seed=2)
    print(sum(grad(f, wrt=1)(h0, w)))
}}
"""

GRAPH_RE = {
    "nodes": r"stats: \d+ graphs, (\d+) nodes after optimization",
    "run_ms": r"nodes after optimization .*; ran in ([\d.]+) ms",
    "peak_mb": r"stats: measured peak tensor memory ([\d.]+) MB",
}
EAGER_RE = {
    "ops": r"stats: eager; (\d+) ops run",
    "run_ms": r"stats: eager; \d+ ops run in ([\d.]+) ms",
    "peak_mb": r"stats: peak tensor memory ([\d.]+) MB",
}


def run_once(spora, path, mode):
    cmd = [spora, "run", path, "--stats"] + (["--mode", "eager"] if mode == "eager" else [])
    t0 = time.time()
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.time() - t0
    out = {"wall_s": wall, "printed": float(r.stdout.split()[0]),
           "stats": [l for l in r.stderr.splitlines() if l.startswith("stats:")]}
    for key, pattern in (GRAPH_RE if mode == "graph" else EAGER_RE).items():
        m = re.search(pattern, r.stderr)
        if not m:
            sys.exit(f"run.py: no {key} in the --stats of {' '.join(cmd)}:\n{r.stderr}")
        out[key] = float(m.group(1))
    return out


def slope(xs, ys):
    """Least-squares slope of ys against xs."""
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def svg_plot(table, trips, path):
    w, h = 900, 360
    panels = [("peak_mb", "peak tensor memory (MB)", 60), ("run_ms", "run time (ms), --stats", 510)]
    colors = {"graph": "#2a6fb0", "eager": "#d35400"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="60" y="20" font-size="13">grad through a loop of n iterations of tanh(h @ w): '
           'source transformation (graph) vs tape (eager)</text>']
    pw, ph, top = 340, 250, 50
    import math
    xs = [math.log2(n) for n in trips]
    for key, title, left in panels:
        ymax = max(table[(n, m)][key] for n in trips for m in ("graph", "eager")) * 1.1
        X = lambda n: left + pw * (math.log2(n) - xs[0]) / (xs[-1] - xs[0])
        Y = lambda v: top + ph * (1 - v / ymax)
        out.append(f'<text x="{left}" y="{top - 8}">{title} against n (log scale)</text>')
        for k in range(5):
            v = ymax * k / 4
            out.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{left + pw}" y2="{Y(v):.1f}" stroke="#ddd"/>'
                       f'<text x="{left - 4}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
        for n in trips:
            out.append(f'<text x="{X(n):.1f}" y="{top + ph + 14}" text-anchor="middle">{n}</text>')
        for mode in ("graph", "eager"):
            pts = " ".join(f"{X(n):.1f},{Y(table[(n, mode)][key]):.1f}" for n in trips)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colors[mode]}" stroke-width="2"/>')
            for n in trips:
                out.append(f'<circle cx="{X(n):.1f}" cy="{Y(table[(n, mode)][key]):.1f}" r="3" fill="{colors[mode]}"/>')
    for i, (mode, label) in enumerate((("graph", "graph mode: source transformation"),
                                       ("eager", "eager mode: tape"))):
        out.append(f'<line x1="{60 + 260 * i}" y1="{h - 16}" x2="{80 + 260 * i}" y2="{h - 16}" '
                   f'stroke="{colors[mode]}" stroke-width="2"/><text x="{84 + 260 * i}" y="{h - 12}">{label}</text>')
    write_svg(path, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spora", default=os.path.join(ROOT, "build", "bin", "spora"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trips", default="16,64,256,1024")
    args = ap.parse_args()
    spora = os.path.abspath(args.spora)
    trips = [int(t) for t in args.trips.split(",")]
    raw, table = [], {}
    with tempfile.TemporaryDirectory() as d:
        for n in trips:
            path = os.path.join(d, f"loop{n}.sp")
            with open(path, "w") as f:
                f.write(PROGRAM.format(n=n))
            for mode in ("graph", "eager"):
                runs = [run_once(spora, path, mode) for _ in range(args.rounds)]
                raw.append({"n": n, "mode": mode, "command": f"spora run loop{n}.sp --stats"
                            + (" --mode eager" if mode == "eager" else ""), "runs": runs})
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k not in ("stats",)}
                table[(n, mode)] = med
                print(f"# n={n} {mode}: {med}", file=sys.stderr, flush=True)
    for n in trips:
        g, e = table[(n, "graph")]["printed"], table[(n, "eager")]["printed"]
        if abs(g - e) > 1e-4 * max(abs(g), 1e-6):
            sys.exit(f"run.py: n={n}: graph mode printed {g}, eager mode {e}")
    lines = ["| n | graph: peak MB | eager: peak MB | graph: run ms | eager: run ms | eager / graph time "
             "| graph: wall s | eager: wall s | graph: IR nodes | eager: ops run |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in trips:
        g, e = table[(n, "graph")], table[(n, "eager")]
        lines.append(f"| {n} | {g['peak_mb']:.2f} | {e['peak_mb']:.2f} | {g['run_ms']:.1f} | {e['run_ms']:.1f} | "
                     f"{e['run_ms'] / g['run_ms']:.2f} | {g['wall_s']:.2f} | {e['wall_s']:.2f} | {g['nodes']:.0f} | "
                     f"{e['ops']:.0f} |")
    fits = {}
    for mode in ("graph", "eager"):
        fits[mode] = {"peak_kb_per_iteration": 1e3 * slope(trips, [table[(n, mode)]["peak_mb"] for n in trips]),
                      "run_ms_per_iteration": slope(trips, [table[(n, mode)]["run_ms"] for n in trips])}
    fits["eager"]["ops_per_iteration"] = slope(trips, [table[(n, "eager")]["ops"] for n in trips])
    fits["graph"]["nodes_per_iteration"] = slope(trips, [table[(n, "graph")]["nodes"] for n in trips])
    lines += ["", "Least-squares slopes over n:", "",
              "| mode | peak memory per iteration | run time per iteration | size per iteration |",
              "|---|---|---|---|",
              f"| graph (source transformation) | {fits['graph']['peak_kb_per_iteration']:.1f} KB | "
              f"{fits['graph']['run_ms_per_iteration']:.3f} ms | {fits['graph']['nodes_per_iteration']:.2f} IR nodes |",
              f"| eager (tape) | {fits['eager']['peak_kb_per_iteration']:.1f} KB | "
              f"{fits['eager']['run_ms_per_iteration']:.3f} ms | {fits['eager']['ops_per_iteration']:.2f} ops run |"]
    cpu = cpu_model()
    load = os.getloadavg()
    header = (f"Generated by `python3 papers/loop_ad/run.py --rounds {args.rounds} --trips {args.trips}` on {cpu} "
              f"({os.cpu_count()} cores, load average {load[0]:.1f} at the end); medians of {args.rounds} "
              "processes per cell.\n\n")
    table_md = "\n".join(lines) + "\n"
    write_text(os.path.join(HERE, "results.md"), "<!-- written by papers/loop_ad/run.py; do not edit -->\n" + header + table_md)
    write_json(os.path.join(HERE, "results.json"), {"cpu": cpu, "cores": os.cpu_count(), "load_average_end": load, "program": PROGRAM,
                   "slopes": fits, "runs": raw})
    svg_plot(table, trips, os.path.join(HERE, "plot.svg"))
    print(header + table_md, end="")


if __name__ == "__main__":
    main()
