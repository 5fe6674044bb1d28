#!/usr/bin/env python3
"""The CI-sized ASan+UBSan run's subset of the suite (README.md of this folder), by one rule:

  1. the candidates are the tests that run a program of the sanitizer build other than `spora`
     and other than the programs that need `spora` to be built (test_driver runs it);
  2. of those, a test that took 2 s or more in build-asan's last run of it (gcc, ASan+UBSan,
     ci_slow_tests.txt) is left out, unless its command starts MPI ranks (mpirun): the MPI
     tests and the leak-suppression probe always run.

Tests that run no program of the build (Python and shell checks of the tree) and every test of
the `spora` program (the CLI, docs, golden programs) are not in the subset. A test missing from
ci_slow_tests.txt (new, or fast) is in it.

  ci_subset.py targets BUILD          the build targets of the candidates (one per line), read
                                      from the configured build before anything is built
  ci_subset.py select BUILD           ctest's -I argument for the subset, after the build
  ci_subset.py count BUILD            the subset's size: tests, programs, seconds of the last run
  ci_subset.py slow BUILD [SECONDS]   rewrites ci_slow_tests.txt from BUILD's last run of each
                                      test (ctest's Testing/Temporary/CTestCostData.txt, and
                                      LastTest.log for failed ones); SECONDS default 2

ci_slow_tests.txt is rewritten after a whole run (./spora test --sanitize), or a run of new
tests in build-asan, by
  tests/sanitizers/ci_subset.py slow build-asan
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW_FILE = os.path.join(HERE, "ci_slow_tests.txt")
DEFAULT_SLOW = 2.0


def base_name(test):
    """A parameterised GoogleTest's name without the `  # GetParam() = ...` that ctest appends
    (it can print addresses, which differ between builds)."""
    return test.split("  # ", 1)[0]


def list_tests(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def declared_commands(build, cache={}):
    """Each test's command line as CMake wrote it into the CTestTestfile.cmake files: ctest's own
    listing gives no command for a test whose program is not built yet."""
    if build not in cache:
        commands = {}
        for folder, _, files in os.walk(build):
            if "CTestTestfile.cmake" in files:
                for line in open(os.path.join(folder, "CTestTestfile.cmake")):
                    declared = re.match(r"add_test\(\[=\[(.*?)\]=\] (.*)\)$", line.strip())
                    if declared:
                        commands[declared.group(1)] = re.findall(r'"([^"]*)"', declared.group(2))
        cache[build] = commands
    return cache[build]


def programs(test, build):
    """The build's outputs a test's command runs (paths relative to BUILD: bin/x, lib/y.so), a
    GoogleTest program not yet built included (ctest lists it as test_x_NOT_BUILT)."""
    prefix = re.escape(os.path.realpath(build).rstrip("/") + "/")
    found = []
    command = test.get("command") or declared_commands(build).get(test["name"], [])
    for arg in command:
        found += re.findall(prefix + r"((?:bin|lib)/[\w.+-]+)", arg)
    name = test["name"]
    if not found and name.endswith("_NOT_BUILT"):
        found.append("bin/" + name[: -len("_NOT_BUILT")])
    return sorted(set(found))


def needs_spora(program, build, cache={}):
    if program not in cache:
        inputs = subprocess.run(["ninja", "-C", build, "-t", "inputs", program], check=True,
                                capture_output=True, text=True).stdout.split()
        cache[program] = program == "bin/spora" or "bin/spora" in inputs
    return cache[program]


def candidates(build):
    """(number, test, programs) of every candidate, numbered as ctest numbers them."""
    picked = []
    for number, test in enumerate(list_tests(build), start=1):
        progs = programs(test, build)
        if progs and not any(needs_spora(p, build) for p in progs):
            picked.append((number, test, progs))
    return picked


def read_slow():
    slow = {}
    if not os.path.exists(SLOW_FILE):
        return slow
    for line in open(SLOW_FILE):
        if line.strip() and not line.startswith("#"):
            seconds, name = line.rstrip("\n").split("\t", 1)
            slow[name] = float(seconds)
    return slow


def subset(build):
    slow = read_slow()
    chosen = []
    for number, test, progs in candidates(build):
        starts_ranks = any(os.path.basename(a) in ("mpirun", "mpiexec")
                           for a in test.get("command") or [])
        if base_name(test["name"]) not in slow or starts_ranks:
            chosen.append((number, test, progs))
    return chosen


def last_run_times(build):
    """Each test's seconds in BUILD's last run of it: ctest's CTestCostData.txt, which keeps the
    time of passed tests only; a failed one's is read from the log of ctest's last invocation
    (LastTest.log) when that ran it."""
    temp = os.path.join(build, "Testing", "Temporary")
    times = {}
    if os.path.exists(os.path.join(temp, "CTestCostData.txt")):
        for line in open(os.path.join(temp, "CTestCostData.txt")):
            if line.startswith("---"):
                break
            name, _, seconds = line.rstrip("\n").rsplit(" ", 2)
            times[base_name(name)] = float(seconds)
    if os.path.exists(os.path.join(temp, "LastTest.log")):
        name = None
        for line in open(os.path.join(temp, "LastTest.log"), errors="replace"):
            started = re.match(r"\d+/\d+ Testing: (.*)$", line.rstrip("\n"))
            if started:
                name = base_name(started.group(1))
            took = re.match(r"Test time = *([\d.]+) sec", line)
            if took and name is not None and not times.get(name):
                times[name] = float(took.group(1))
    return times


def main(argv):
    if len(argv) < 3 or argv[1] not in ("targets", "select", "count", "slow"):
        sys.exit(__doc__)
    command, build = argv[1], argv[2]
    if command == "targets":
        # The preloaded library of run.sh comes with every run.
        targets = {"lib/libspora_keep_mpi_plugins.so"}
        for _, _, progs in candidates(build):
            targets.update(progs)
        print("\n".join(sorted(targets)))
    elif command == "select":
        chosen = subset(build)
        not_built = [t["name"] for _, t, _ in chosen if t["name"].endswith("_NOT_BUILT")]
        if not_built or not chosen:
            sys.exit(f"ci_subset.py: not built: {' '.join(not_built) or 'anything'}")
        # -I START,END,STRIDE,N,N,...: an empty range, then the tests by number.
        print("0,0,1," + ",".join(str(n) for n, _, _ in chosen))
    elif command == "count":
        chosen = subset(build)
        costs = last_run_times(build)
        progs = sorted({p for _, _, ps in chosen for p in ps})
        known = [costs[base_name(t["name"])] for _, t, _ in chosen if base_name(t["name"]) in costs]
        print(f"{len(chosen)} tests of {len(progs)} programs: {' '.join(progs)}")
        print(f"{sum(known):.0f} s in this build's last run of them ({len(known)} timed)")
    else:
        limit = float(argv[3]) if len(argv) > 3 else DEFAULT_SLOW
        times = last_run_times(build)
        # ctest rereads its cost data split at spaces, so the time of a test whose name has one
        # (a parameterised GoogleTest's `  # GetParam() = ...`) is lost at the next ctest run
        # that does not run it: such a test keeps the time this file already gives it.
        for name, seconds in read_slow().items():
            if not times.get(name):
                times[name] = seconds
        rows = [(seconds, name) for name, seconds in times.items() if seconds >= limit]
        current = {base_name(t["name"]) for _, t, _ in candidates(build)}
        lines = [
            f"# The candidates of the CI-sized run (ci_subset.py) that took {limit:g} s or more in",
            "# build-asan's last run of them (seconds, name); the run leaves them out. Rewritten",
            "# after a whole run (./spora test --sanitize) or a run of new tests in build-asan by",
            "#   tests/sanitizers/ci_subset.py slow build-asan",
        ]
        for seconds, name in sorted(rows, key=lambda r: (-r[0], r[1])):
            if name in current:
                lines.append(f"{seconds:.1f}\t{name}")
        with open(SLOW_FILE, "w") as out:
            out.write("\n".join(lines) + "\n")
        print(f"ci_subset.py: {len(lines) - 4} tests in {SLOW_FILE}")


if __name__ == "__main__":
    main(sys.argv)
