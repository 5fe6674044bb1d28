#!/usr/bin/env python3
"""Megatron-LM SC'21 table 1, rows 1-5, simulated by `spora sim-gpt` (papers/megatron_sc21/README.md).

Runs build/bin/spora sim-gpt --json for each row under the protocol of the README, writes the raw
JSON of every run (results.json), the table (results.md) and the plot (plot.svg, drawn here:
no plotting library needed), and prints the table.

    python3 papers/megatron_sc21/run.py [path/to/spora]
"""
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = "benchmarks/sim/gpt/dgx-a100-64.yaml"

# Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM", SC'21 (arXiv:2104.04473), table 1, rows 1-5: V = 51,200, s = 2,048.
# The micro-batch and the data-parallel implementation of each row are those of the authors'
# script for this table, examples/sc21/run_table_1.sh of NVIDIA/Megatron-LM (MBS, DDP):
# "torch" is PyTorch's DistributedDataParallel, whose bucketed gradient all-reduce overlaps the
# backward pass (sim-gpt's default); "local" is Megatron's own, which reduces the gradients
# after the backward pass (--no-grad-overlap).
ROWS = [
    # name, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s per GPU (paper), mbs, ddp
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 16, "torch"),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 16, "torch"),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 16, "torch"),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, "torch"),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, "local"),
]

# The protocol (README): the configuration of the authors' script, f16, full recomputation.
# Sensitivity columns, not used for the verdict: the other data-parallel implementation (the
# gradient all-reduce beside the backward pass instead of after it, or the reverse); the fastest
# micro-batch that fits (--micro-batch auto, with the range over every micro-batch that fits);
# no interference between NCCL's kernels and the compute beside them (comm_sm_share 0).
PROTOCOL = ["--precision", "f16", "--recompute", "full"]

# Protocol v2's kernel rates (README, "Kernel rates"): papers/a100_kernel_rates.py.
sys.path.insert(0, os.path.dirname(HERE))
from a100_kernel_rates import GEMM_CEILING, RATES, SOFTMAX, SOFTMAX_FLAGS, SOFTMAX_GRAD  # noqa: E402


def row_flags(row, other_ddp=False, micro_batch=None):
    mbs, ddp = row[9], row[10]
    local = (ddp == "local") != other_ddp
    return ["--micro-batch", str(micro_batch or mbs)] + (["--no-grad-overlap"] if local else [])


VARIANTS = {"primary": lambda row: row_flags(row) + RATES,
            "v1": lambda row: row_flags(row),
            "softmax_only": lambda row: row_flags(row) + SOFTMAX_FLAGS,
            "other_ddp": lambda row: row_flags(row, other_ddp=True) + RATES,
            "auto_micro_batch": lambda row: row_flags(row, micro_batch="auto") + RATES,
            "no_interference": lambda row: row_flags(row) + RATES + ["--comm-sm-share", "0"]}


def sim_gpt(spora, row, extra):
    name, heads, hidden, layers, tp, pp, gpus, batch = row[:8]
    cmd = [spora, "sim-gpt", "--cluster", CLUSTER, "--gpus", str(gpus), "--hidden", str(hidden),
           "--layers", str(layers), "--heads", str(heads), "--vocab", "51200", "--seq", "2048",
           "--batch", str(batch), "--tp", str(tp), "--pp", str(pp), "--json"] + PROTOCOL + extra
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return " ".join(cmd[1:]), json.loads(out)


def spread(r):
    """TFLOP/s per GPU over the micro-batch sizes that fit (the auto search's candidates)."""
    flops = r["model_flops"] / r["gpus"] / 1e12
    fits = [flops / c["step_seconds"] for c in r["candidates"] if c["fits"]]
    return f"{min(fits):.1f}-{max(fits):.1f}" if fits else "-"


def implied_gemm(r, row):
    """The GEMM rate at which the simulated step would take the paper's time, everything else
    unchanged: a diagnostic of the gap, used nowhere in the simulation."""
    paper_step = r["model_flops"] / (row[8] * 1e12 * r["gpus"])
    b = r["breakdown"]
    return b["gemm_flops"] / (b["gemm"] + paper_step - r["step_seconds"]) / 1e12


def svg_plot(rows, ours, path):
    w, h, left, bottom, top = 640, 360, 60, 50, 30
    ymax = 200.0
    bar = 22
    group = (w - left - 20) / len(rows)
    y = lambda v: h - bottom - (h - bottom - top) * v / ymax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="18" text-anchor="middle">Megatron-LM SC\'21 table 1: '
             f'TFLOP/s per GPU, paper vs spora sim-gpt</text>']
    for t in range(0, int(ymax) + 1, 50):
        parts.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{w - 20}" y2="{y(t):.1f}" '
                     f'stroke="#ddd"/><text x="{left - 6}" y="{y(t) + 4:.1f}" '
                     f'text-anchor="end">{t}</text>')
    for i, (row, v) in enumerate(zip(rows, ours)):
        x0 = left + i * group + group / 2 - bar
        for j, (val, color) in enumerate([(row[8], "#888"), (v, "#2a6fb0")]):
            parts.append(f'<rect x="{x0 + j * bar:.1f}" y="{y(val):.1f}" width="{bar - 2}" '
                         f'height="{y(0) - y(val):.1f}" fill="{color}"><title>{val:.1f}</title></rect>')
            parts.append(f'<text x="{x0 + j * bar + bar / 2 - 1:.1f}" y="{y(val) - 4:.1f}" '
                         f'text-anchor="middle" font-size="10">{val:.0f}</text>')
        lo, hi = row[8] * 0.9, row[8] * 1.1
        parts.append(f'<rect x="{x0 - 4:.1f}" y="{y(hi):.1f}" width="{2 * bar + 6}" '
                     f'height="{y(lo) - y(hi):.1f}" fill="none" stroke="#c33" stroke-dasharray="3,2"/>')
        parts.append(f'<text x="{x0 + bar:.1f}" y="{h - bottom + 16}" text-anchor="middle">'
                     f'{row[0]} / {row[6]}</text>')
    parts.append(f'<rect x="{left}" y="{h - 22}" width="10" height="10" fill="#888"/>'
                 f'<text x="{left + 14}" y="{h - 13}">paper</text>'
                 f'<rect x="{left + 70}" y="{h - 22}" width="10" height="10" fill="#2a6fb0"/>'
                 f'<text x="{left + 84}" y="{h - 13}">spora sim-gpt</text>'
                 f'<rect x="{left + 190}" y="{h - 22}" width="10" height="10" fill="none" '
                 f'stroke="#c33" stroke-dasharray="3,2"/><text x="{left + 204}" y="{h - 13}">'
                 f'paper +-10%</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    spora = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/bin/spora")
    spora = os.path.abspath(spora)
    raw, lines = [], []
    ours = []
    lines.append("| model | GPUs | tp | pp | dp | micro-batch | DDP | paper TFLOP/s | ours | ours / paper "
                 "| within 10% | step s | bubble | memory GB | ours, v1 (no measured rates) "
                 "| ours, softmax rates only | ours, the other DDP "
                 "| ours, fastest micro-batch that fits | ours, every micro-batch that fits (min-max) "
                 "| ours, no interference | simulated GEMM TFLOP/s | memory-bound share "
                 "of compute | GEMM TFLOP/s the paper's step implies, all else equal |")
    lines.append("|" + "---|" * 23)
    for row in ROWS:
        results = {k: sim_gpt(spora, row, flags(row)) for k, flags in VARIANTS.items()}
        cmd, r = results["primary"]
        raw.append({"row": row[0], "paper_tflops_per_gpu": row[8],
                    "runs": {k: {"command": c, "result": res} for k, (c, res) in results.items()}})
        t = r["tflops_per_gpu"]
        ours.append(t)
        ratio = t / row[8]
        p = r["parallel"]
        b = r["breakdown"]
        lines.append(f"| {row[0]} | {row[6]} | {p['tp']} | {p['pp']} | {p['dp']} | "
                     f"{p['micro_batch']} | {row[10]} | {row[8]} | {t:.1f} | {ratio:.4f} | "
                     f"{'yes' if abs(ratio - 1) <= 0.10 else 'no'} | {r['step_seconds']:.3f} | "
                     f"{100 * r['bubble_fraction']:.1f}% | {r['memory_per_gpu_bytes'] / 1e9:.1f} | "
                     f"{results['v1'][1]['tflops_per_gpu']:.1f} ({results['v1'][1]['tflops_per_gpu'] / row[8]:.3f}) | "
                     f"{results['softmax_only'][1]['tflops_per_gpu']:.1f} ({results['softmax_only'][1]['tflops_per_gpu'] / row[8]:.3f}) | "
                     f"{results['other_ddp'][1]['tflops_per_gpu']:.1f} | "
                     f"{results['auto_micro_batch'][1]['tflops_per_gpu']:.1f} "
                     f"(m={results['auto_micro_batch'][1]['parallel']['micro_batch']}) | "
                     f"{spread(results['auto_micro_batch'][1])} | "
                     f"{results['no_interference'][1]['tflops_per_gpu']:.1f} | "
                     f"{b['gemm_flops'] / b['gemm'] / 1e12:.0f} | "
                     f"{100 * (1 - b['gemm'] / b['compute']):.0f}% | {implied_gemm(r, row):.0f} |")
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    header = (f"Generated by `python3 papers/megatron_sc21/run.py` ({platform.node()}, {cpu}); "
              f"commands and raw JSON in results.json. Protocol v2 kernel rates: GEMM ceiling "
              f"{GEMM_CEILING:.4f}, softmax {SOFTMAX:.4f}, softmax-grad {SOFTMAX_GRAD:.4f} of "
              f"the HBM bandwidth.\n\n")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(HERE, "results.md"), "w") as f:
        f.write(header + table)
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(raw, f, indent=1, sort_keys=True)
        f.write("\n")
    svg_plot(ROWS, ours, os.path.join(HERE, "plot.svg"))
    print(table, end="")


if __name__ == "__main__":
    main()
