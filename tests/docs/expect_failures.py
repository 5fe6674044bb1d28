#!/usr/bin/env python3
"""Checks that doctest.py fails on a page with wrong outputs, and says where.

    expect_failures.py doctest.py SPORA page.md

Each `<!-- expect: MESSAGE -->` comment in the page announces a failure of the next fenced
block (several comments: several failures): doctest.py must print `page.md:LINE: MESSAGE`
(LINE: that block's opening fence, or for a console block its `$` line), report exactly that
many failures and exit with status 1.
"""
import re
import subprocess
import sys


def main():
    doctest, spora, page = sys.argv[1:4]
    lines = open(page, encoding="utf-8").read().split("\n")
    expected, pending = [], []
    for n, text in enumerate(lines, 1):
        m = re.match(r"<!-- expect: (.*) -->$", text)
        if m:
            pending.append(m.group(1))
        elif pending and ((text.startswith("```") and text != "```console") or text.startswith("$ ")):
            expected += [f"{page}:{n}: {msg}" for msg in pending]
            pending = []
    p = subprocess.run([sys.executable, doctest, "--spora", spora, page], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(p.stdout)
    ok = p.returncode == 1
    if not ok:
        print(f"expected exit status 1, got {p.returncode}")
    for e in expected:
        if e not in p.stdout.split("\n"):
            print(f"missing: {e}")
            ok = False
    if f"{len(expected)} failure(s)" not in p.stdout:
        print(f"expected {len(expected)} failures")
        ok = False
    print("the doc-test fails where it should" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
