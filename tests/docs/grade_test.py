#!/usr/bin/env python3
"""Grades one submission with docs/exercises/grade.py and checks the verdict it gives.

    grade_test.py GRADE SPORA EXERCISE SUBMISSION VERDICT [--says TEXT]... [grade.py options]

Passes when grade.py prints the line `verdict: VERDICT`, exits with 0 for `pass` and 1 for any
other verdict, and its output contains every --says TEXT (the reason, in its words). Options
it does not know (--time-limit 5) go to grade.py.
"""
import argparse
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("grade")
    ap.add_argument("spora")
    ap.add_argument("exercise")
    ap.add_argument("submission")
    ap.add_argument("verdict")
    ap.add_argument("--says", action="append", default=[])
    a, rest = ap.parse_known_args()
    cmd = [sys.executable, a.grade, a.exercise, a.submission, "--spora", a.spora] + rest
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(p.stdout)
    problems = []
    lines = p.stdout.split("\n")
    if f"verdict: {a.verdict}" not in lines:
        got = [l for l in lines if l.startswith("verdict: ")]
        problems.append(f"expected the verdict '{a.verdict}', got {got or 'no verdict line'}")
    want_rc = 0 if a.verdict == "pass" else 1
    if p.returncode != want_rc:
        problems.append(f"expected exit status {want_rc}, got {p.returncode}")
    for text in a.says:
        if text not in p.stdout:
            problems.append(f"the explanation does not say: {text}")
    for problem in problems:
        print("FAILED: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
