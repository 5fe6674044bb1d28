#!/usr/bin/env python3
"""Where a prediction of `spora sim` goes wrong, op by op: the real step's time per
(primitive, result type), from `spora train-step --profile`'s trace (rank 0, the ops the step
itself runs; per step after the first, the median over those steps), beside the modelled time
of the same ops from `spora sim --profile`, the largest differences first. A first table
splits the step into its ops, the optimizer's update (the trace's "update" spans), the
collectives (real: rank 0's time in them, waiting included; simulated: the exposed
communication) and the rest (the time between them), real and simulated.

    compare_ops.py --cluster SPEC.yaml [--spora build/bin/spora] [--workload w2|w3|w4]
                   [--strategy one|dp2|tp2|...] [--steps 6] [--top 25] [--batch B]

--strategy takes validate.py's strategies but the pipelines (the simulator times their stages,
not their ops); the real run has as many ranks as the strategy's mesh.

The spec is a calibration of this machine (`spora calibrate --out SPEC.yaml`), taken just
before. A diagnostic: validate.py gives the figures that count.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import validate  # noqa: E402  (its workloads and strategy files)


COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"}


def real_ops(spora, model, batch, steps, strategy, ranks):
    """{(primitive, type): ms per step} of rank 0's ops in the steps after the first, the median
    update per step (ms), the median time per step in collectives (ms) and the median step (ms)
    that train-step prints."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        cmd = [spora, "train-step", model, "--strategy", strategy, "--ranks", str(ranks),
               "--steps", str(steps), "--batch", str(batch), "--profile", trace]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        if p.returncode != 0:
            sys.exit("compare_ops.py: " + (p.stderr or p.stdout).strip())
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    step = re.search(r"^median step ([0-9.]+) ms", p.stdout, re.M)

    def per_step_ms(spans):
        """The median over the steps after the first of the spans' time in a step (ms)."""
        n = len(spans) // steps
        return statistics.median(sum(e["dur"] for e in spans[i * n:(i + 1) * n]) / 1e3
                                 for i in range(1, steps)) if n else 0.0

    update = per_step_ms(sorted((e for e in events if e.get("ph") == "X" and e.get("pid", 0) == 0
                                 and e.get("name") == "update"), key=lambda e: e["ts"]))
    every = sorted((e for e in events if e.get("ph") == "X" and e.get("pid", 0) == 0
                    and e.get("args", {}).get("depth", 0) == 0 and "type" in e.get("args", {})
                    and e.get("name") != "update"),
                   key=lambda e: e["ts"])
    ops = [e for e in every if e["name"] not in COLLECTIVES]
    comm = per_step_ms([e for e in every if e["name"] in COLLECTIVES])
    per_step = len(ops) // steps
    if per_step * steps != len(ops):
        sys.exit(f"compare_ops.py: {len(ops)} ops in {steps} steps: not the same ops per step")
    # Per (primitive, type): its time in each step after the first, then the median over them.
    steps_of = collections.defaultdict(lambda: [0.0] * (steps - 1))
    for i, e in enumerate(ops[per_step:]):
        steps_of[(e["name"], e["args"]["type"])][i // per_step] += e["dur"] / 1e3
    return ({k: statistics.median(v) for k, v in steps_of.items()}, update, comm,
            float(step.group(1)) if step else 0.0)


def sim_ops(spora, cluster, model, batch, strategy):
    cmd = [spora, "sim", model, "--cluster", cluster, "--strategy", strategy, "--batch",
           str(batch), "--profile"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("compare_ops.py: " + (p.stderr or p.stdout).strip())
    per, typed = {}, False
    m = re.search(r"^step time\s+([0-9.]+) ms", p.stdout, re.M)
    u = re.search(r"\+ update ([0-9.]+) ms\)", p.stdout)
    c = re.search(r"^communication .*\(exposed ([0-9.]+) ms\)", p.stdout, re.M)
    step, update = (float(m.group(1)) if m else 0.0), (float(u.group(1)) if u else 0.0)
    comm = float(c.group(1)) if c else 0.0
    for line in p.stdout.splitlines():
        if line.startswith("# per step: primitive, result type"):
            typed = True
            continue
        m = re.match(r"^(\S+)\s+(.+?)\s+(\d+)\s+([0-9.]+)$", line) if typed else None
        if m:  # (a tuple's type has spaces)
            per[(m.group(1), m.group(2))] = float(m.group(4))
        elif typed:
            break
    return per, update, comm, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spora", default=os.path.join(validate.ROOT, "build", "bin", "spora"))
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--workload", default="w4", choices=sorted(validate.WORKLOADS))
    ap.add_argument("--strategy", default="one",
                    choices=[s for s in validate.STRATEGY_RANKS if not s.startswith("pp")])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--batch", type=int, default=0, help="the global batch (default: the workload's)")
    args = ap.parse_args()
    if args.steps < 2:
        sys.exit("compare_ops.py: --steps must be at least 2 (the first is left out)")
    model, batch, _ = validate.WORKLOADS[args.workload]
    batch = args.batch or batch
    strategy = validate.strategy_file(args.workload, args.strategy)
    ranks = validate.ranks_of(args.workload, args.strategy)
    real, real_update, real_comm, real_step = real_ops(args.spora, model, batch, args.steps,
                                                       strategy, ranks)
    sim, sim_update, sim_comm, sim_step = sim_ops(args.spora, args.cluster, model, batch, strategy)
    keys = sorted(set(real) | set(sim), key=lambda k: -abs(real.get(k, 0) - sim.get(k, 0)))
    where = "one rank" if ranks == 1 else f"{args.strategy} on {ranks} ranks, rank 0"
    print(f"{args.workload}, {where}, ms per step ({validate.cpu_name()}):")
    print(f"{'':<8} {'step':>8} {'ops':>8} {'update':>8} {'comm':>8} {'rest':>8}")
    for name, ops, update, comm, step in (
            ("real", sum(real.values()), real_update, real_comm, real_step),
            ("sim", sum(sim.values()), sim_update, sim_comm, sim_step)):
        print(f"{name:<8} {step:8.3f} {ops:8.3f} {update:8.3f} {comm:8.3f} "
              f"{step - ops - update - comm:8.3f}")
    print(f"{'primitive':<14} {'result type':<22} {'real':>8} {'sim':>8} {'real-sim':>9} {'ratio':>6}")
    for k in keys[:args.top]:
        r, s = real.get(k, 0.0), sim.get(k, 0.0)
        ratio = f"{r / s:6.2f}" if s > 0 else "     -"
        print(f"{k[0]:<14} {k[1]:<22} {r:8.3f} {s:8.3f} {r - s:+9.3f} {ratio}")


if __name__ == "__main__":
    main()
