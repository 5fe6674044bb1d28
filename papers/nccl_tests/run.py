#!/usr/bin/env python3
"""nccl-tests all_reduce_perf bus bandwidths, published against simulated (`spora sim-coll`).

    papers/nccl_tests/run.py [--spora build/bin/spora]

For every entry of tests/sim/data/published.yaml (the published figures and their sources,
also checked by tests/sim/published_test.cpp) it runs `spora sim-coll --json` over a sweep of
sizes on the entry's cluster spec, with the ring's default channels (one per NIC across
nodes) and, across nodes, again with --channels 1 (one ring, what the simulator did without
channels). It prints the table (published, ours, ratio at the published size), writes the raw
JSON answers to results.json, the table to results.md and a plot of bus bandwidth against size
to busbw.svg (drawn here: no plotting library needed), all next to this script.
"""
import argparse
import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_size(text):
    number, unit = text.split()
    return int(float(number) * UNITS[unit])


def parse_gbps(text):
    number, unit = text.split()
    assert unit == "GB/s", text
    return float(number)


def sim_coll(spora, entry, sizes, channels=None):
    cmd = [spora, "sim-coll", "--cluster", os.path.join(ROOT, entry["cluster"]), "--op",
           "all-reduce", "--algo", entry["algorithm"], "--ranks", str(entry["ranks"]),
           "--dtype", "f32", "--sizes", sizes, "--factor", "4", "--json"]
    if channels is not None:
        cmd += ["--channels", str(channels)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return {"command": " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                for c in cmd), "result": json.loads(out)}


def busbw_at(run, size):
    for row in run["result"]["results"]:
        if row["size_bytes"] == size:
            return row["busbw_gbps"]
    raise KeyError(size)


def svg_plot(series, published, path):
    """busBw (GB/s) against size (log2), one polyline per series, published figures as dots."""
    import math
    left, top, width, height = 70, 40, 640, 360
    xs = [math.log2(r["size_bytes"]) for s in series for r in s["rows"]]
    x0, x1 = min(xs), max(xs)
    y1 = max([r["busbw_gbps"] for s in series for r in s["rows"]] + [p["busbw"] for p in published])
    y1 = 50 * math.ceil(y1 / 50)
    X = lambda v: left + width * (math.log2(v) - x0) / (x1 - x0)
    Y = lambda v: top + height * (1 - v / y1)
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#9c755f",
              "#edc948", "#bab0ac"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 330}" '
           f'height="{top + height + 60}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">all-reduce bus bandwidth: simulated (lines) '
           'and published (dots), ring, f32</text>']
    for v in range(0, int(y1) + 1, 50):
        out.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{left + width}" y2="{Y(v):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    for e in range(int(x0), int(x1) + 1, 2):
        label = f"{2 ** e // (1 << 30)} GiB" if e >= 30 else (
            f"{2 ** e // (1 << 20)} MiB" if e >= 20 else f"{2 ** e // 1024} KiB")
        out.append(f'<text x="{X(2 ** e):.1f}" y="{top + height + 16}" '
                   f'text-anchor="middle">{label}</text>')
    out.append(f'<text x="{left + width / 2}" y="{top + height + 40}" text-anchor="middle">'
               'message size</text>')
    out.append(f'<text x="16" y="{top + height / 2}" transform="rotate(-90 16 {top + height / 2})"'
               ' text-anchor="middle">busBw (GB/s)</text>')
    for i, s in enumerate(series):
        color = colors[i % len(colors)]
        dash = ' stroke-dasharray="4 3"' if s["dashed"] else ""
        points = " ".join(f"{X(r['size_bytes']):.1f},{Y(r['busbw_gbps']):.1f}" for r in s["rows"])
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" '
                   f'stroke-width="1.5"{dash}/>')
        ly = top + 14 * i
        out.append(f'<line x1="{left + width + 15}" y1="{ly}" x2="{left + width + 35}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{left + width + 40}" y="{ly + 4}">{s["label"]}</text>')
        for p in published:
            if p["series"] == i:
                out.append(f'<circle cx="{X(p["size"]):.1f}" cy="{Y(p["busbw"]):.1f}" r="4" '
                           f'fill="{color}"><title>published {p["busbw"]} GB/s</title></circle>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spora", default=os.path.join(ROOT, "build/bin/spora"))
    args = parser.parse_args()
    with open(os.path.join(ROOT, "tests/sim/data/published.yaml")) as f:
        entries = yaml.safe_load(f)

    rows, runs, series, published = [], [], [], []
    for e in entries:
        size = parse_size(e["size"])
        start = size
        for _ in range(6):  # up to 4096 x smaller, in x4 steps that end at the size
            if start // 4 >= 1 << 16:
                start //= 4
        sweep = f"{start}:{size}"
        with open(os.path.join(ROOT, e["cluster"])) as f:
            per_node = yaml.safe_load(f)["devices_per_node"]
        variants = [("", None)]
        if e["ranks"] > per_node:
            variants.append((", 1 ring", 1))
        for suffix, channels in variants:
            run = sim_coll(args.spora, e, sweep, channels)
            runs.append({"system": e["system"], **run})
            ours = busbw_at(run, size)
            pub = parse_gbps(e["busbw"])
            used = run["result"]["channels"]
            rows.append((e["system"] + suffix, e["ranks"], e["size"], used, pub, ours, ours / pub))
            series.append({"label": f"{e['cluster'].split('/')[-1][:-5]}, {e['ranks']} ranks, "
                                    f"{used} ch", "rows": run["result"]["results"],
                           "dashed": channels == 1})
            if channels is None:
                published.append({"series": len(series) - 1, "size": size, "busbw": pub})

    header = "| system | ranks | size | channels | published busBw (GB/s) | ours (GB/s) | ours / published |"
    lines = [header, "|---|---|---|---|---|---|---|"]
    for system, ranks, size, channels, pub, ours, ratio in rows:
        lines.append(f"| {system} | {ranks} | {size} | {channels} | {pub:.0f} | {ours:.1f} | "
                     f"{ratio:.3f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(HERE, "results.md"), "w") as f:
        f.write("<!-- written by papers/nccl_tests/run.py; do not edit -->\n" + table + "\n")
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(runs, f, indent=1)
        f.write("\n")
    svg_plot(series, published, os.path.join(HERE, "busbw.svg"))
    print(f"wrote {os.path.relpath(HERE, ROOT)}/results.md, results.json, busbw.svg")


if __name__ == "__main__":
    sys.exit(main())
