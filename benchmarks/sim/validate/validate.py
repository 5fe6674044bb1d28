#!/usr/bin/env python3
"""Out-of-sample validation of `spora sim` on this machine (protocol: README.md next to this file).

    benchmarks/sim/validate/validate.py [--spora build/bin/spora] [--rounds 3] [--only w2,w4]
                                        [--out benchmarks/results/sim_validation]

1. ONE calibration from microbenchmarks: `spora calibrate --devices 4` (nothing of W1-W4 runs).
2. Real steps: `spora train-step MODEL --strategy S --ranks N --steps K --batch B` for every
   (workload, strategy) below, in interleaved rounds; a run's figure is its median step, a
   configuration's the median over the rounds, its spread the range of the rounds.
3. Predicted steps: `spora sim MODEL --cluster machine.yaml --strategy S --batch B --json`.
4. Table, errors, median and worst |error|, and the order of every pair of strategies of a
   workload that the real runs separate (their ranges do not overlap).
Writes OUT.json (every raw figure, the spec, the CPU, the command) and OUT.md (the table).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
STRATEGIES = os.path.join(HERE, "strategies")

# workload -> (model file, global batch, steps per real run)
WORKLOADS = {
    "w2": (os.path.join(ROOT, "benchmarks/sim/w2_mlp.sp"), 64, 20),
    "w3": (os.path.join(HERE, "w3_lenet5.sp"), 64, 10),
    "w4": (os.path.join(ROOT, "benchmarks/sim/w4_block.sp"), 8, 6),
}
# W1 (benchmarks/workloads/w1_mlp_forward.sp) is inference only: `spora sim` and
# `spora train-step --strategy` take a training step (value_and_grad), so it has no row here.

# strategy -> ranks; the file is strategies/<workload>_<strategy>.json (one.json for "one").
STRATEGY_RANKS = {"one": 1, "dp2": 2, "tp2": 2, "zero2": 2, "pp2": 2,
                  "dp4": 4, "tp4": 4, "zero4": 4, "dp2tp2": 4, "pp2dp2": 4}

# HOOK (Fashion-MNIST epoch): when `spora run` runs a user's whole program on N ranks (the
# distributed-runtime issue), add its rows here as (name, real command, simulated command) and
# compare one epoch's time the same way. Not measured yet.
FASHION_MNIST_EPOCH = None


def sh(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def strategy_file(workload, strategy):
    name = "one" if strategy == "one" else f"{workload}_{strategy}"
    return os.path.join(STRATEGIES, name + ".json")


def real_run(spora, chrt, workload, strategy):
    model, batch, steps = WORKLOADS[workload]
    cmd = chrt + [spora, "train-step", model, "--strategy", strategy_file(workload, strategy),
                  "--ranks", str(STRATEGY_RANKS[strategy]), "--steps", str(steps),
                  "--batch", str(batch)]
    rc, out, err = sh(cmd)
    m = re.search(r"^median step ([0-9.]+) ms", out, re.M)
    if rc != 0 or not m:
        return None, (err or out).strip().splitlines()[-1:] or ["no output"]
    return float(m.group(1)), None


def simulate(spora, machine, workload, strategy):
    model, batch, _ = WORKLOADS[workload]
    cmd = [spora, "sim", model, "--cluster", machine, "--strategy",
           strategy_file(workload, strategy), "--batch", str(batch), "--json"]
    rc, out, err = sh(cmd)
    try:
        return json.loads(out)["step_seconds"] * 1e3, None
    except (ValueError, KeyError):
        return None, (err or out).strip().splitlines()[-1:] or ["no output"]


def order_check(rows):
    """Pairs of one workload's strategies that the real runs separate; does sim agree?"""
    decided, agree, disagree = 0, 0, []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a["workload"] != b["workload"] or a["sim_ms"] is None or b["sim_ms"] is None:
                continue
            if max(a["runs"]) < min(b["runs"]):
                fast, slow = a, b
            elif max(b["runs"]) < min(a["runs"]):
                fast, slow = b, a
            else:
                continue
            decided += 1
            if fast["sim_ms"] < slow["sim_ms"]:
                agree += 1
            else:
                disagree.append(f'{fast["workload"]}: {fast["strategy"]} < {slow["strategy"]}')
    return decided, agree, disagree


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spora", default=os.path.join(ROOT, "build/bin/spora"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--strategies", default="", help="comma-separated strategies (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks/results/sim_validation"))
    args = ap.parse_args()
    started = time.time()
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    chrt = ["chrt", "-f", "5"] if shutil.which("chrt") and sh(["chrt", "-f", "5", "true"])[0] == 0 else []
    workloads = [w for w in WORKLOADS if not args.only or w in args.only.split(",")]
    strategies = [s for s in STRATEGY_RANKS if not args.strategies or s in args.strategies.split(",")]
    configs = [(w, s) for w in workloads for s in strategies if os.path.exists(strategy_file(w, s))]

    tmp = tempfile.mkdtemp()
    machine = os.path.join(tmp, "machine.yaml")
    rc, _, err = sh(chrt + [args.spora, "calibrate", "--devices", "4", "--out", machine])
    if rc != 0:
        sys.exit(f"validate.py: spora calibrate failed: {err.strip()}")
    print(f"calibrated in {time.time() - started:.0f} s", file=sys.stderr)

    runs = {c: [] for c in configs}
    errors = {}
    for r in range(args.rounds):
        # Interleaved rounds; each round starts one configuration later, so a slow spell of the
        # machine does not always hit the same strategy.
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            if c in errors:
                continue
            ms, e = real_run(args.spora, chrt, *c)
            if ms is None:
                errors[c] = "real: " + " ".join(e)
            else:
                runs[c].append(ms)
        print(f"round {r + 1} done at {time.time() - started:.0f} s", file=sys.stderr)

    rows = []
    for c in configs:
        sim_ms, e = simulate(args.spora, machine, *c)
        if e and c not in errors:
            errors[c] = "sim: " + " ".join(e)
        real = statistics.median(runs[c]) if runs[c] else None
        rows.append({"workload": c[0], "strategy": c[1], "ranks": STRATEGY_RANKS[c[1]],
                     "runs": runs[c], "real_ms": real, "sim_ms": sim_ms,
                     "error": (sim_ms / real - 1) if real and sim_ms else None,
                     "failure": errors.get(c)})

    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    decided, agree, disagree = order_check([r for r in rows if r["runs"]])
    summary = {
        "compared": len(errs), "configurations": len(rows),
        "median_abs_error": statistics.median(errs) if errs else None,
        "worst_abs_error": max(errs) if errs else None,
        "within_15pct": sum(e <= 0.15 for e in errs), "within_25pct": sum(e <= 0.25 for e in errs),
        "pairs_decided": decided, "pairs_same_order": agree, "pairs_other_order": disagree,
    }
    with open(machine) as f:
        spec = f.read()
    load = open("/proc/loadavg").read().split()[:3]
    record = {
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(), "cores": os.cpu_count(), "load_at_end": load,
        "scheduling": "chrt -f 5" if chrt else "default", "rounds": args.rounds,
        "seconds": round(time.time() - started), "rows": rows, "summary": summary,
        "fashion_mnist_epoch": FASHION_MNIST_EPOCH, "machine_yaml": spec,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json.tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(args.out + ".json.tmp", args.out + ".json")

    lines = [f"# spora sim against real runs, out of sample",
             "",
             f"`{record['command']}`, {record['date']}, {record['cpu']} ({record['cores']} cores), "
             f"{args.rounds} interleaved rounds, {record['scheduling']}, load at the end "
             f"{' '.join(load)}, {record['seconds']} s. Raw figures: `{os.path.basename(args.out)}.json`.",
             "",
             "| workload | strategy | ranks | real ms (median) | runs | sim ms | sim / real - 1 |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        runs_txt = " ".join(f"{x:.2f}" for x in r["runs"])
        real = f"{r['real_ms']:.2f}" if r["real_ms"] else "-"
        sim = f"{r['sim_ms']:.2f}" if r["sim_ms"] else "-"
        err = f"{r['error'] * 100:+.0f}%" if r["error"] is not None else (r["failure"] or "-")
        lines.append(f"| {r['workload']} | {r['strategy']} | {r['ranks']} | {real} | {runs_txt} | {sim} | {err} |")
    s = summary
    if errs:
        lines += ["",
                  f"Compared {s['compared']} of {s['configurations']}: median |error| "
                  f"{s['median_abs_error'] * 100:.1f}% (target 15%), worst {s['worst_abs_error'] * 100:.1f}% "
                  f"(target 25%); within 15%: {s['within_15pct']}, within 25%: {s['within_25pct']}.",
                  f"Pairs the real runs separate: {decided}; simulated in the same order: {agree}" +
                  ("; the other way: " + ", ".join(disagree) if disagree else "") + "."]
    lines += ["", "Fashion-MNIST epoch: not measured (hook FASHION_MNIST_EPOCH in validate.py)."]
    with open(args.out + ".md.tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".md.tmp", args.out + ".md")
    shutil.copy(machine, args.out + "_machine.yaml")
    print("\n".join(lines))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
