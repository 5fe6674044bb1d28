#!/usr/bin/env python3
"""ctest bench_suite_quick: `./spora bench --quick --tiny --only frontend,ad` on a built tree
(SPORA_NO_BUILD=1: the test builds nothing), then report.json against its schema and the
figures it must hold.

    python3 benchmarks/suite/test_quick.py SOURCE_DIR BUILD_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402
import schema  # noqa: E402


def main(root, build, out):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, SPORA_NO_BUILD="1", SPORA_BUILD_DIR=build)
    cmd = [os.path.join(root, "spora"), "bench", "--quick", "--tiny", "--only", "frontend,ad",
           "--rounds", "2", "--out", out]
    print("# " + " ".join(cmd), flush=True)
    subprocess.run(cmd, env=env, check=True, timeout=600)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    problems = schema.validate(report, schema.load(bench.SCHEMA_PATH))
    figs = {f["id"]: f for f in report["figures"]}

    def need(cond, what):
        if not cond:
            problems.append(what)

    need(report["quick"] and report["tiny"] and report["rounds"] == 2, "quick, tiny and 2 rounds are not stated")
    need(report["machine"]["cpu"] not in ("", "unknown"), "the machine's CPU is not named")
    for g in ("frontend", "ad"):
        need(report["groups"].get(g, {}).get("status") == "ran", f"group {g} did not run: {report['groups'].get(g)}")
    need(set(report["groups"]) == {"frontend", "ad"}, f"--only ran {sorted(report['groups'])}")
    expected = ["frontend/BM_FrontEnd/400/time", "frontend/BM_FrontEnd/400/lines_per_second",
                "ad/BM_CompileMlp100/time", "ad/BM_LoopBackwardMemory/8/peak_memory",
                "ad/BM_LoopBackwardMemory/16/peak_memory", "ad/BM_CheckpointMemory/0/1/peak_memory",
                "ad/BM_CheckpointMemory/1/1/peak_memory", "ad/checkpoint/memory_ratio"]
    for fid in expected:
        need(fid in figs, f"figure {fid} is missing")
    if all(fid in figs for fid in expected):
        for fid in expected:
            f = figs[fid]
            need(f["n"] == 2 and 0 < f["min"] <= f["median"] <= f["max"], f"{fid}: {f}")
        # Each iteration of the differentiated loop keeps its input h, f32[64, 256]: 65,536 bytes
        # more peak memory per iteration (the reference interpreter's count is exact).
        m8 = figs["ad/BM_LoopBackwardMemory/8/peak_memory"]["median"]
        m16 = figs["ad/BM_LoopBackwardMemory/16/peak_memory"]["median"]
        per_iteration = (m16 - m8) * 1e6 / 8
        need(abs(per_iteration / 65536 - 1) < 0.01,
             f"loop AD peak memory 8 -> 16 iterations: {m8} -> {m16} MB, {per_iteration:.0f} B per iteration, not 65,536")
        need(figs["ad/checkpoint/memory_ratio"]["median"] < 1.0, "@checkpoint did not lower peak memory")
        # The generated program has 6 + 400 x 13 + 407 = 5,613 lines (bench_frontend.cpp), and the
        # rate is lines over the wall time of the same rounds.
        fe = figs["frontend/BM_FrontEnd/400/time"]
        need("of 5613 generated lines" in fe.get("note", ""), f"front end: {fe.get('note')}")
        rate = figs["frontend/BM_FrontEnd/400/lines_per_second"]
        need(abs(rate["max"] * fe["min"] / 1e3 / 5613 - 1) < 1e-9, f"front end: {rate} is not 5,613 lines over {fe}")
    need(os.path.getsize(os.path.join(out, "report.html")) > 1000, "report.html is missing or empty")
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print(f"ok: {len(figs)} figures, schema valid")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
