#!/usr/bin/env python3
"""Fashion-MNIST test accuracy of examples/fashion_mlp.sp and examples/fashion_lenet.sp against the
dataset's published MLP and CNN figures (papers/fashion_baselines/README.md).

    python3 papers/fashion_baselines/run.py [--spora build/bin/spora] [--lenet-epochs E]

Runs each example (LeNet-5 with E epochs: `range(10)` and the cosine schedule's `10 * 938`
rewritten) in a temporary folder, reads the test accuracy of every epoch from the curves the
program writes (runs/<name>.csv), and writes results.json, results.md and plot.svg next to this
script. Standard library only.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from study import cpu_model, write_json, write_svg, write_text  # noqa: E402

# (model, published test accuracy, family, source): README.md, "The published figures".
PUBLISHED = [
    ("MLP 256-128-100 (Keras)", 0.8833, "mlp",
     "zalandoresearch/fashion-mnist README benchmark table (PR 115)"),
    ("MLPClassifier, best of the authors' scikit-learn benchmark", 0.877, "mlp",
     "the authors' benchmark site, quoted in Knet.jl PR 160"),
    ("2 Conv Layers with max pooling (Keras)", 0.876, "cnn",
     "zalandoresearch/fashion-mnist README benchmark table"),
    ("2 Conv Layers with max pooling and ELU (PyTorch)", 0.903, "cnn",
     "zalandoresearch/fashion-mnist README benchmark table"),
    ("2 Conv Layers with max pooling (TensorFlow), > 300 epochs", 0.916, "cnn",
     "zalandoresearch/fashion-mnist README benchmark table"),
]
EXAMPLES = [("fashion_mlp", "mlp", 5), ("fashion_lenet", "cnn", 10)]  # name, family, own epochs


def program(name, epochs, own):
    with open(os.path.join(ROOT, "examples", f"{name}.sp")) as f:
        text = f.read()
    if epochs != own:
        text, n1 = re.subn(rf"range\({own}\)", f"range({epochs})", text)
        text, n2 = re.subn(rf"\b{own} \* 938\b", f"{epochs} * 938", text)
        if (n1, n2) != (1, 1):
            sys.exit(f"run.py: examples/{name}.sp no longer has one range({own}) and one {own} * 938 "
                     f"({n1}, {n2} found): update run.py")
    return text


def run_example(spora, name, epochs, own):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"{name}.sp")
        with open(path, "w") as f:
            f.write(program(name, epochs, own))
        cmd = [spora, "run", path]
        print(f"# {' '.join(cmd)} (examples/{name}.sp, {epochs} epochs)", file=sys.stderr, flush=True)
        t0 = time.time()
        out = subprocess.run(cmd, cwd=d, check=True, capture_output=True, text=True)
        wall = time.time() - t0
        with open(os.path.join(d, "runs", f"{name}.csv")) as f:
            rows = list(csv.DictReader(f))
    epochs_rows = [{"epoch": int(float(r["epoch"])), "test_acc": float(r["test_acc"]),
                    "test_loss": float(r["test_loss"])} for r in rows if r.get("test_acc")]
    return {"example": f"examples/{name}.sp", "epochs": epochs, "own_epochs": own,
            "command": f"spora run {name}.sp" + (f" (range({own}) -> range({epochs}))" if epochs != own else ""),
            "wall_seconds": round(wall, 1), "stdout": out.stdout, "per_epoch": epochs_rows}


def svg_plot(runs, path):
    w, h, left, top, pw, ph = 880, 380, 60, 40, 420, 280
    lo, hi = 0.80, 0.95
    emax = max(r["epochs"] for r in runs.values())
    X = lambda e: left + pw * (e - 1) / max(emax - 1, 1)
    Y = lambda a: top + ph * (1 - (min(max(a, lo), hi) - lo) / (hi - lo))
    colors = {"mlp": "#2a6fb0", "cnn": "#d35400"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">Fashion-MNIST test accuracy per epoch: ours (lines) '
           'and published (dashed)</text>']
    for k in range(0, 16, 5):
        a = lo + k / 100
        out.append(f'<line x1="{left}" y1="{Y(a):.1f}" x2="{left + pw}" y2="{Y(a):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{Y(a) + 4:.1f}" text-anchor="end">{a:.2f}</text>')
    for e in range(1, emax + 1):
        out.append(f'<text x="{X(e):.1f}" y="{top + ph + 16}" text-anchor="middle">{e}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 34}" text-anchor="middle">epoch</text>')
    legend = []
    for name, r in runs.items():
        fam = r["family"]
        pts = " ".join(f"{X(p['epoch']):.1f},{Y(p['test_acc']):.1f}" for p in r["per_epoch"])
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colors[fam]}" stroke-width="2"/>')
        legend.append((colors[fam], "", f"ours: {r['example']} ({r['per_epoch'][-1]['test_acc']:.4f})"))
    for model, acc, fam, _ in PUBLISHED:
        out.append(f'<line x1="{left}" y1="{Y(acc):.1f}" x2="{left + pw}" y2="{Y(acc):.1f}" '
                   f'stroke="{colors[fam]}" stroke-dasharray="5,3" stroke-width="1"/>')
        legend.append((colors[fam], ' stroke-dasharray="5,3"', f"{model}: {acc}"))
    for i, (color, dash, text) in enumerate(legend):
        y = top + 14 * i
        out.append(f'<line x1="{left + pw + 10}" y1="{y}" x2="{left + pw + 30}" y2="{y}" stroke="{color}" '
                   f'stroke-width="2"{dash}/><text x="{left + pw + 34}" y="{y + 4}" font-size="9">{text}</text>')
    write_svg(path, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spora", default=os.path.join(ROOT, "build", "bin", "spora"))
    ap.add_argument("--lenet-epochs", type=int, default=10, help="LeNet-5's epochs (the example's own: 10)")
    ap.add_argument("--replot", action="store_true", help="only redraw plot.svg from results.json")
    args = ap.parse_args()
    if args.replot:
        with open(os.path.join(HERE, "results.json")) as f:
            svg_plot(json.load(f)["runs"], os.path.join(HERE, "plot.svg"))
        return
    spora = os.path.abspath(args.spora)
    runs = {}
    for name, fam, own in EXAMPLES:
        epochs = args.lenet_epochs if name == "fashion_lenet" else own
        runs[name] = dict(run_example(spora, name, epochs, own), family=fam)
    lines = ["| published model | published | ours | epochs | ours - published | reached |",
             "|---|---|---|---|---|---|"]
    for model, acc, fam, _ in PUBLISHED:
        r = next(r for r in runs.values() if r["family"] == fam)
        ours = r["per_epoch"][-1]["test_acc"]
        lines.append(f"| {model} | {acc:.4f} | {ours:.4f} ({r['example']}) | {r['epochs']} | "
                     f"{100 * (ours - acc):+.2f} pp | {'yes' if ours >= acc else 'no'} |")
    cpu = cpu_model()
    header = (f"Generated by `python3 papers/fashion_baselines/run.py --lenet-epochs {args.lenet_epochs}` on "
              f"{cpu} ({os.cpu_count()} cores); wall times: "
              + ", ".join(f"{r['example']} {r['wall_seconds']} s" for r in runs.values()) + ".\n\n")
    table = "\n".join(lines) + "\n"
    write_text(os.path.join(HERE, "results.md"), "<!-- written by papers/fashion_baselines/run.py; do not edit -->\n" + header + table)
    write_json(os.path.join(HERE, "results.json"), {"cpu": cpu, "cores": os.cpu_count(), "published": [
            {"model": m, "test_acc": a, "family": fam, "source": s} for m, a, fam, s in PUBLISHED],
            "runs": runs})
    svg_plot(runs, os.path.join(HERE, "plot.svg"))
    print(header + table, end="")


if __name__ == "__main__":
    main()
