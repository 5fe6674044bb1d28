#!/usr/bin/env python3
"""Out-of-sample validation of `spora sim` on this machine (protocol: README.md next to this file).

    benchmarks/sim/validate/validate.py [--spora build/bin/spora] [--rounds 3] [--only w2,w4,fashion]
                                        [--strategies one,dp2] [--out benchmarks/results/sim_validation]

1. A calibration from microbenchmarks at the start of every round: `spora calibrate --devices 4`
   (nothing of W1-W4 runs).
2. Real steps: `spora train-step MODEL --strategy S --ranks N --steps K --batch B` for every
   (workload, strategy) below, and one Fashion-MNIST epoch (`spora run fashion_epoch.sp`), in
   interleaved rounds; a run's figure is its median step (for the epoch, the median time between
   batches of its training loop, "X ms/step" on the progress bar's last line), a
   configuration's the median over the rounds, its spread the range of the rounds.
3. Predicted: `spora sim MODEL --cluster machineR.yaml --strategy S --batch B --json` with each
   round's spec, the median over the rounds; the epoch's step is the simulated step of 64
   images, and its epoch 938 of them (60,000 = 937 x 64 + 32: the short last batch is counted
   as a whole one on both sides).
4. Table, errors, median and worst |error|, and the order of every pair of strategies of a
   workload that the real runs separate (their ranges do not overlap).
Everything runs under the default scheduling policy (no chrt; the protocol says why).
Writes OUT.json (every raw figure, the spec, the CPU, the load, the command) and OUT.md.
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
# W1 (benchmarks/workloads/w1_mlp_forward.sp) is inference only and has no row: `spora sim`
# simulates training steps only (its program's main must take value_and_grad of its loss;
# tools/cmd_sim.cpp) and `spora train-step` times training steps only.

# strategy -> ranks; the file is strategies/<workload>_<strategy>.json (one.json for "one").
STRATEGY_RANKS = {"one": 1, "dp2": 2, "tp2": 2, "zero2": 2, "pp2": 2,
                  "dp4": 4, "tp4": 4, "zero4": 4, "dp2tp2": 4, "pp2dp2": 4}

# The Fashion-MNIST epoch (the user's own program, `spora run PROG --ranks N --strategy S`):
# strategy -> ranks; the file is strategies/fashion_<strategy>.json ("one": no --ranks).
# Real: the median time between batches of the training loop (the progress bar's last line,
# "X ms/step"; its first batch, which decodes the files and compiles, is outside it), times
# FASHION_STEPS + 1 batches. Predicted: the same program, `spora sim fashion_epoch.sp
# --optimizer adam --update fused --batch 64` (its loop's training step at `batch`), times the
# same count. Not predicted: the data pipeline's own work (shuffling, batching on the prefetch
# thread) and the loop's host work (report, progress bar).
FASHION_MNIST_EPOCH = {
    "program": os.path.join(HERE, "fashion_epoch.sp"),
    "strategies": {"one": 1, "dp2": 2, "dp4": 4, "tp4": 4, "dp2tp2": 4, "zero4": 4},
}
FASHION_SAMPLES, FASHION_BATCH = 60000, 64
FASHION_STEPS, FASHION_LAST = FASHION_SAMPLES // FASHION_BATCH, FASHION_SAMPLES % FASHION_BATCH


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


def ranks_of(workload, strategy):
    if workload == "fashion":
        return FASHION_MNIST_EPOCH["strategies"][strategy]
    return STRATEGY_RANKS[strategy]


def real_run(spora, workload, strategy):
    if workload == "fashion":
        return real_epoch(spora, strategy)
    model, batch, steps = WORKLOADS[workload]
    cmd = [spora, "train-step", model, "--strategy", strategy_file(workload, strategy),
           "--ranks", str(STRATEGY_RANKS[strategy]), "--steps", str(steps), "--batch", str(batch)]
    rc, out, err = sh(cmd)
    m = re.search(r"^median step ([0-9.]+) ms", out, re.M)
    if rc != 0 or not m:
        return None, (err or out).strip().splitlines()[-1:] or ["no output"]
    return float(m.group(1)), None


def real_epoch(spora, strategy):
    """The epoch's training loop in ms: the bar's median step ("X ms/step") times the batches."""
    cmd = [spora, "run", FASHION_MNIST_EPOCH["program"]]
    if strategy != "one":
        cmd += ["--ranks", str(ranks_of("fashion", strategy)),
                "--strategy", strategy_file("fashion", strategy)]
    with tempfile.TemporaryDirectory() as cwd:  # the program writes nothing, but run it aside
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd)
    m = None
    for line in (p.stderr + p.stdout).replace("\r", "\n").splitlines():
        if "total" in line:
            m = re.search(r" ([0-9.]+) (s|ms|us)/step", line) or m
    if p.returncode != 0 or not m:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
    step_ms = float(m.group(1)) * {"s": 1e3, "ms": 1.0, "us": 1e-3}[m.group(2)]
    return step_ms * (FASHION_STEPS + 1), None


def sim_step(spora, machine, model, strategy, batch, extra=()):
    cmd = [spora, "sim", model, "--cluster", machine, "--strategy", strategy, "--batch",
           str(batch), "--json", *extra]
    rc, out, err = sh(cmd)
    try:
        return json.loads(out)["step_seconds"] * 1e3, None
    except (ValueError, KeyError):
        return None, (err or out).strip().splitlines()[-1:] or ["no output"]


def simulate(spora, machine, workload, strategy):
    if workload == "fashion":
        # The program's run fuses Adam's update (one kernel per parameter; ZeRO-1's pieces node
        # by node, as the simulator's --update fused models them): README, protocol step 5.
        f = strategy_file("fashion", strategy)
        adam = ["--optimizer", "adam", "--update", "fused"]
        full, e = sim_step(spora, machine, FASHION_MNIST_EPOCH["program"], f, FASHION_BATCH, adam)
        if e:
            return None, e
        return (FASHION_STEPS + 1) * full, None
    model, batch, _ = WORKLOADS[workload]
    return sim_step(spora, machine, model, strategy_file(workload, strategy), batch)


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
    load_at_start = open("/proc/loadavg").read().split()[:3]
    if float(load_at_start[0]) > 0.5:
        print(f"validate.py: warning: load {' '.join(load_at_start)} at the start; the protocol "
              "wants a quiet machine (the figures record it)", file=sys.stderr)
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        sys.exit("validate.py: run it under the default scheduling policy (no chrt): "
                 "the protocol's real runs and calibration both use it")
    workloads = [w for w in list(WORKLOADS) + ["fashion"] if not args.only or w in args.only.split(",")]
    wanted = lambda s: not args.strategies or s in args.strategies.split(",")
    configs = [(w, s) for w in workloads if w != "fashion" for s in STRATEGY_RANKS
               if wanted(s) and os.path.exists(strategy_file(w, s))]
    if "fashion" in workloads:
        configs += [("fashion", s) for s in FASHION_MNIST_EPOCH["strategies"] if wanted(s)]

    tmp = tempfile.mkdtemp()
    machines = []  # one calibration per round, just before its real runs
    runs = {c: [] for c in configs}
    errors = {}
    for r in range(args.rounds):
        machine = os.path.join(tmp, f"machine{r + 1}.yaml")
        rc, _, err = sh([args.spora, "calibrate", "--devices", "4", "--out", machine])
        if rc != 0:
            sys.exit(f"validate.py: spora calibrate failed: {err.strip()}")
        machines.append(machine)
        print(f"round {r + 1} calibrated at {time.time() - started:.0f} s", file=sys.stderr)
        # Interleaved rounds; each round starts one configuration later, so a slow spell of the
        # machine does not always hit the same strategy.
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            if c in errors:
                continue
            ms, e = real_run(args.spora, *c)
            if ms is None:
                errors[c] = "real: " + " ".join(e)
            else:
                runs[c].append(ms)
        print(f"round {r + 1} done at {time.time() - started:.0f} s", file=sys.stderr)

    rows = []
    for c in configs:
        sims = []
        for machine in machines:
            ms, e = simulate(args.spora, machine, *c)
            if e and c not in errors:
                errors[c] = "sim: " + " ".join(e)
            if ms is not None:
                sims.append(ms)
        sim_ms = statistics.median(sims) if len(sims) == len(machines) else None
        real = statistics.median(runs[c]) if runs[c] else None
        row = {"workload": c[0], "strategy": c[1], "ranks": ranks_of(*c),
               "runs": runs[c], "real_ms": real, "sims": sims, "sim_ms": sim_ms,
               "error": (sim_ms / real - 1) if real and sim_ms else None,
               "failure": errors.get(c)}
        if c[1].startswith("pp") and c[0] != "fashion":
            # Shown, not counted (README, protocol step 5): the passes sharing the cores only
            # while they run.
            model, batch, _ = WORKLOADS[c[0]]
            shared = [sim_step(args.spora, machine, model, strategy_file(*c), batch,
                               ["--core-sharing", "running"])[0] for machine in machines]
            if all(x is not None for x in shared):
                row["sims_running"] = shared
                row["sim_running_ms"] = statistics.median(shared)
        rows.append(row)

    steps = [r for r in rows if r["workload"] != "fashion"]
    epochs = [r for r in rows if r["workload"] == "fashion"]
    errs = [abs(r["error"]) for r in steps if r["error"] is not None]
    decided, agree, disagree = order_check([r for r in rows if r["runs"]])
    summary = {
        "compared": len(errs), "configurations": len(steps),
        "median_abs_error": statistics.median(errs) if errs else None,
        "worst_abs_error": max(errs) if errs else None,
        "within_15pct": sum(e <= 0.15 for e in errs), "within_25pct": sum(e <= 0.25 for e in errs),
        "pairs_decided": decided, "pairs_same_order": agree, "pairs_other_order": disagree,
        "fashion_epoch_errors": {r["strategy"]: r["error"] for r in epochs},
    }
    specs = []
    for machine in machines:
        with open(machine) as f:
            specs.append(f.read())
    load = open("/proc/loadavg").read().split()[:3]
    record = {
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(), "cores": os.cpu_count(), "load_at_end": load,
        "load_at_start": load_at_start, "scheduling": "default (SCHED_OTHER)", "rounds": args.rounds,
        "seconds": round(time.time() - started), "rows": rows, "summary": summary,
        "fashion_mnist_epoch": {"program": os.path.relpath(FASHION_MNIST_EPOCH["program"], ROOT),
                                "steps": FASHION_STEPS, "last_batch": FASHION_LAST},
        "machine_yamls": specs,  # one calibration per round
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json.tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(args.out + ".json.tmp", args.out + ".json")

    lines = [f"# spora sim against real runs, out of sample",
             "",
             f"`{record['command']}`, {record['date']}, {record['cpu']} ({record['cores']} cores), "
             f"{args.rounds} interleaved rounds, {record['scheduling']} scheduling, load at the start "
             f"{' '.join(load_at_start)}, at the end {' '.join(load)}, {record['seconds']} s. "
             f"Raw figures: `{os.path.basename(args.out)}.json`.",
             "",
             "| workload | strategy | ranks | real ms (median) | runs | sim ms (median) | per round's calibration | sim / real - 1 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in steps:
        runs_txt = " ".join(f"{x:.2f}" for x in r["runs"])
        sims_txt = " ".join(f"{x:.2f}" for x in r["sims"])
        real = f"{r['real_ms']:.2f}" if r["real_ms"] else "-"
        sim = f"{r['sim_ms']:.2f}" if r["sim_ms"] else "-"
        err = f"{r['error'] * 100:+.0f}%" if r["error"] is not None else (r["failure"] or "-")
        lines.append(f"| {r['workload']} | {r['strategy']} | {r['ranks']} | {real} | {runs_txt} | {sim} | {sims_txt} | {err} |")
    s = summary
    if errs:
        lines += ["",
                  f"Compared {s['compared']} of {s['configurations']}: median |error| "
                  f"{s['median_abs_error'] * 100:.1f}% (target 15%), worst {s['worst_abs_error'] * 100:.1f}% "
                  f"(target 25%); within 15%: {s['within_15pct']}, within 25%: {s['within_25pct']}.",
                  f"Pairs the real runs separate: {decided}; simulated in the same order: {agree}" +
                  ("; the other way: " + ", ".join(disagree) if disagree else "") + "."]
    running = [r for r in steps if r.get("sim_running_ms") and r["real_ms"]]
    if running:
        lines += ["", "Pipeline rows simulated with `--core-sharing running` as well (only the passes "
                  "running at once share the cores; shown, not in the figures above):", "",
                  "| workload | strategy | ranks | real ms | sim ms, static (above) | sim ms, running | "
                  "sim / real - 1, running |", "|---|---|---|---|---|---|---|"]
        for r in running:
            lines.append(f"| {r['workload']} | {r['strategy']} | {r['ranks']} | {r['real_ms']:.2f} | "
                         f"{r['sim_ms']:.2f} | {r['sim_running_ms']:.2f} | "
                         f"{(r['sim_running_ms'] / r['real_ms'] - 1) * 100:+.0f}% |")
    lines += ["", f"Fashion-MNIST epoch (`{record['fashion_mnist_epoch']['program']}`): the training "
              f"loop, real: the median time between its batches (the progress bar's \"ms/step\") times "
              f"{FASHION_STEPS + 1} batches; simulated: {FASHION_STEPS + 1} steps of {FASHION_BATCH} "
              "(the same program's training step by `spora sim`, Adam; the short last batch counted whole "
              "on both sides). Not in the step figures above.", ""]
    if epochs:
        lines += ["| strategy | ranks | real s (median) | runs | sim s | sim / real - 1 |",
                  "|---|---|---|---|---|---|"]
        for r in epochs:
            runs_txt = " ".join(f"{x / 1e3:.2f}" for x in r["runs"])
            real = f"{r['real_ms'] / 1e3:.2f}" if r["real_ms"] else "-"
            sim = f"{r['sim_ms'] / 1e3:.2f}" if r["sim_ms"] else "-"
            err = f"{r['error'] * 100:+.0f}%" if r["error"] is not None else (r["failure"] or "-")
            lines.append(f"| {r['strategy']} | {r['ranks']} | {real} | {runs_txt} | {sim} | {err} |")
        e = [abs(r["error"]) for r in epochs if r["error"] is not None]
        if e:
            lines += ["", f"Epochs compared {len(e)} of {len(epochs)}: median |error| "
                      f"{statistics.median(e) * 100:.1f}% (target 15%), worst {max(e) * 100:.1f}% "
                      "(target 25%)."]
    else:
        lines += ["Not run (`--only` left it out)."]
    with open(args.out + ".md.tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".md.tmp", args.out + ".md")
    shutil.copy(machines[-1], args.out + "_machine.yaml")  # the last round's (all in the JSON)
    print("\n".join(lines))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
