#!/usr/bin/env python3
"""`spora sim --profile`: the modelled time per primitive and per (primitive, result type), on
both simulators (a strategy file: the SPMD step; --strategy dp: the data-parallel one); the two
tables account for the same ops and time, the typed one most time first. Then
benchmarks/sim/validate/compare_ops.py sets a real step's ops beside them, after a table that
splits both steps into ops, update and the rest.

    sim_profile_test.py SPORA SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys

spora, root = sys.argv[1], sys.argv[2]
model = os.path.join(root, "benchmarks/sim/w2_mlp.sp")
spec = os.path.join(root, "benchmarks/results/sim_validation_machine.yaml")
one = os.path.join(root, "benchmarks/sim/validate/strategies/one.json")

# (dp: the spec's 4 devices each take 16 of the 64)
for strategy, batch in ((one, 64), ("dp", 16)):
    r = subprocess.run([spora, "sim", model, "--cluster", spec, "--strategy", strategy,
                        "--batch", "64", "--profile"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    a = lines.index("# per step: primitive, calls, ms (forward and backward; update apart)")
    b = lines.index("# per step: primitive, result type, calls, ms")
    per = {}
    for line in lines[a + 1:b]:
        name, calls, ms = line.split()
        per[name] = (int(calls), float(ms))
    typed = []
    for line in lines[b + 1:]:
        m = re.match(r"^(\S+)\s+(.+?)\s+(\d+)\s+([0-9.]+)$", line)
        if not m:
            break
        typed.append((m.group(1), m.group(2), int(m.group(3)), float(m.group(4))))
    assert typed, r.stdout
    # The same ops: per primitive, the calls and the time of its typed rows add up.
    for name, (calls, ms) in per.items():
        rows = [t for t in typed if t[0] == name]
        assert sum(t[2] for t in rows) == calls, (name, calls, rows)
        assert abs(sum(t[3] for t in rows) - ms) <= 1e-4 * (len(rows) + 1), (name, ms, rows)
    assert [t[3] for t in typed] == sorted((t[3] for t in typed), reverse=True), typed
    # W2's GEMMs with a [B,512] result: [B,784] @ [784,512] and [B,512] @ [512,512]
    # forward, and the backward's two input gradients (dy @ w^T) into those layers.
    assert any(t[0] == "matmul" and t[1] == f"f32[{batch},512]" and t[2] == 4 for t in typed), typed
    assert any(t[0] == "matmul" and t[1] == "f32[784,512]" and t[2] == 1 for t in typed), typed

def compare_ops(*extra):
    """compare_ops.py's split of the step ({"real": [...], "sim": [...]}) and its lines."""
    r = subprocess.run([sys.executable, os.path.join(root, "benchmarks/sim/validate/compare_ops.py"),
                        "--spora", spora, "--cluster", spec, "--workload", "w2", "--steps", "3",
                        "--top", "5", *extra], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[1].split() == ["step", "ops", "update", "comm", "rest"], out
    split = {}
    for line in out[2:4]:
        name, *ms = line.split()
        split[name] = [float(x) for x in ms]
    assert sorted(split) == ["real", "sim"], out
    for name, (step, ops, update, comm, rest) in split.items():
        # The step, its ops and its SGD update (six parameters) all take time on both sides (the
        # real figures are medians of two steps, so a preemption on a busy machine may inflate
        # one: no comparison between them).
        assert step > 0 and ops > 0 and update > 0, out
    assert out[4].split() == ["primitive", "result", "type", "real", "sim", "real-sim", "ratio"], out
    assert len(out) == 10 and any(l.startswith("matmul ") for l in out[5:]), out
    return split, out


split, out = compare_ops()
assert out[0].startswith("w2, one rank, ms per step ("), out
# One rank's simulated step is its ops and its update, nothing between them, and no collective
# on either side.
assert abs(split["sim"][4]) < 0.01 and split["sim"][3] == 0 and split["real"][3] == 0, out
# Tensor parallelism on 2 ranks: rank 0's ops, and its forward all_reduce on both sides (real:
# the time rank 0 spent in it; simulated: the exposed communication). Needs MPI's launcher.
if shutil.which("mpirun") or shutil.which("mpiexec"):
    split, out = compare_ops("--strategy", "tp2")
    assert out[0].startswith("w2, tp2 on 2 ranks, rank 0, ms per step ("), out
    assert split["real"][3] > 0 and split["sim"][3] > 0, out
else:
    print("no mpirun: compare_ops.py --strategy tp2 not run")
print("spora sim --profile: per primitive and per result type on both simulators; compare_ops.py")
