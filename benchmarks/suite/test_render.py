#!/usr/bin/env python3
"""report.html in headless Chromium (ctest bench_suite_chromium): the page renders, its one
script runs (body data-rendered counts the SVG plots) and the console stays empty (no script
error, no failed load). Exits 77, ctest's SKIP_RETURN_CODE, where no Chromium is installed
(Debian: apt-get install chromium).

    python3 benchmarks/suite/test_render.py [report.json]    (default: a synthetic report)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import report_html  # noqa: E402
from figures import figure, target  # noqa: E402
from test_suite import BASE, synthetic_report, variant  # noqa: E402

BROWSERS = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]


def page(report_path=None):
    if report_path:
        with open(report_path) as f:
            report = json.load(f)
        history = report_html.load_history(os.path.dirname(os.path.dirname(os.path.abspath(report_path))),
                                           exclude=report_path)
        return report_html.render(report, history)
    old = synthetic_report(BASE, created="2026-11-30T10:00:00+00:00")
    new = synthetic_report(variant({"ad/BM_CompileMlp100/time": [130.0, 133.0, 135.0]}) +
                           [figure("sim/m/vs_paper", "x", [1.05], kind="vs_published",
                                   tgt=target("within", 0.1, "paper")),
                            figure("workloads/W2/graph/vs_peer", "x", [0.7, 0.9, 0.8], kind="vs_peer",
                                   tgt=target("<=", 0.8, "issue 21"))])
    return report_html.render(new, [(old["created"], {f["id"]: f for f in old["figures"]})])


def run_browser(browser, html, d):
    """(exit status, dumped DOM, the page's console lines and failed loads) for one page."""
    path = os.path.join(d, "report.html")
    with open(path, "w") as f:
        f.write(html)
    # Chromium's own network traffic (sign-in, sync, component updates) is switched off: on a
    # machine without a network it logs net::ERR_NAME_NOT_RESOLVED for it.
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-sync", "--disable-component-update",
           "--no-default-browser-check", f"--user-data-dir={os.path.join(d, 'profile')}",
           "--enable-logging=stderr", "--v=1", "--virtual-time-budget=3000", "--dump-dom",
           "file://" + path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    # Console lines are "...:CONSOLE(12)] ..." in older Chromium and "...:INFO:CONSOLE:12] ..."
    # in newer; failed loads of anything the page names (it should name none) are net::ERR_.
    console = [line for line in r.stderr.splitlines()
               if CONSOLE.search(line) or ("net::ERR_" in line and ("file://" in line or "report.html" in line))]
    return r, console


CONSOLE = re.compile(r":CONSOLE[(:]\d+\]")


def main():
    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        print("SKIP: no Chromium (" + ", ".join(BROWSERS) + ") on PATH")
        return 77
    html = page(sys.argv[1] if len(sys.argv) > 1 else None)
    svgs = html.count("<svg ")
    with tempfile.TemporaryDirectory() as d:
        # The detector first: a page with a script error must show in the console lines, or
        # this Chromium logs in a form the test does not read and an empty console means nothing.
        _, seen = run_browser(browser, "<html><body><script>no_such_function();</script></body></html>", d)
        if not any("no_such_function" in line for line in seen):
            print(f"FAIL: {browser} did not report a planted script error in the form this test reads")
            return 1
        r, console = run_browser(browser, html, d)
    m = re.search(r'data-rendered="(\d+)"', r.stdout)
    problems = []
    if r.returncode != 0:
        problems.append(f"{os.path.basename(browser)} exited {r.returncode}: {r.stderr[-2000:]}")
    if not m:
        problems.append("the dumped DOM has no data-rendered attribute: the page did not render")
    elif int(m.group(1)) != svgs + 1:
        problems.append(f"data-rendered is {m.group(1)}, expected {svgs + 1} (the page's script did not "
                        f"run, or the {svgs} SVG plots did not all parse)")
    problems += [f"console: {line}" for line in console]
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print(f"ok: {browser} rendered the page ({svgs} SVG plots), console empty "
              "(a planted script error was seen)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
