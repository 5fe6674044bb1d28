"""Running a Google Benchmark binary with repetitions and reading its JSON.

Each repetition is one round: the samples of a benchmark are the real times (or a counter) of
its repetitions, not Google Benchmark's own aggregates.
"""
import json
import os
import re
import subprocess
import sys

TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def run(exe, out_json, filt=None, rounds=1, min_time=None, extra=(), env=None, prefix=(),
        timeout=None, log=sys.stderr):
    """Runs exe (optionally under `prefix`, e.g. mpirun) and returns (command, parsed JSON)."""
    if not os.path.exists(exe):
        raise FileNotFoundError(f"{exe} is not built (ninja -C <build> {os.path.basename(exe)})")
    cmd = list(prefix) + [exe, f"--benchmark_out={out_json}", "--benchmark_out_format=json",
                          f"--benchmark_repetitions={rounds}"]
    if filt:
        cmd.append(f"--benchmark_filter={filt}")
    if min_time is not None:
        cmd.append(f"--benchmark_min_time={min_time}")
    cmd += list(extra)
    print("# " + " ".join(cmd), file=log, flush=True)
    subprocess.run(cmd, check=True, env=env, stdout=log, stderr=log, timeout=timeout)
    with open(out_json) as f:
        return cmd, json.load(f)


# Name segments Google Benchmark appends for how a benchmark is run, not what it measures.
_RUN_SEGMENT = re.compile(r"^(iterations|min_time|min_warmup_time|repeats):|^(manual_time|real_time|process_time)$")


def name(b):
    """The benchmark's name without its run-setting segments ("BM_X/8/iterations:1" -> "BM_X/8")."""
    return "/".join(p for p in b.get("run_name", b["name"]).split("/") if not _RUN_SEGMENT.match(p))


def samples(data):
    """{benchmark name: [run dict, one per repetition]} from Google Benchmark JSON, without its
    aggregates (mean, median, stddev, cv) and without runs that reported an error."""
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        out.setdefault(name(b), []).append(b)
    return out


def errors(data):
    """{benchmark name: error message} of the runs that failed."""
    return {name(b): b.get("error_message", "?") for b in data.get("benchmarks", []) if b.get("error_occurred")}


def times_ms(runs):
    return [r["real_time"] * TO_MS[r.get("time_unit", "ns")] for r in runs]


def counter(runs, name):
    return [r[name] for r in runs if name in r]


def context(data):
    """The context Google Benchmark records (host, cpus, MHz, caches, library build type)."""
    c = dict(data.get("context", {}))
    c.pop("date", None)
    return c
