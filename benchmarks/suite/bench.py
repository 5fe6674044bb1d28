#!/usr/bin/env python3
"""Spora's benchmark suite in one command (benchmarks/suite/README.md).

    ./spora bench [--out DIR] [--quick] [--tiny] [--only g1,g2] [--rounds N]
    ./spora bench --compare A/report.json B/report.json [--threshold 0.1]
    ./spora bench --validate DIR/report.json

Runs the groups (workloads, ad, frontend, collectives, sim, search, simscale), each N rounds,
and writes DIR/report.json (every figure with unit, median, min, max; the machine; the command
line), DIR/report.html (one self-contained page) and DIR/raw/ (every tool's own output).
DIR defaults to bench-results/<date>-<time>-<host>/ in the repository; the page plots each
figure's history over the other reports in DIR's parent folder. Python 3 standard library only.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import gbench  # noqa: E402
import groups  # noqa: E402
import machine  # noqa: E402
import regress  # noqa: E402
import report_html  # noqa: E402
import schema  # noqa: E402

SCHEMA_ID = "spora-bench-report/1"
SCHEMA_PATH = os.path.join(HERE, "report.schema.json")
ROUNDS = {"full": 5, "quick": 2}  # issue 21: medians over at least 5 rounds


class Context:
    """What a group needs: where things are, how many rounds, and a log of what it ran."""

    def __init__(self, args, out, log):
        self.root, self.build, self.raw, self.log = ROOT, os.path.abspath(args.build), \
            os.path.join(out, "raw"), log
        self.rounds, self.quick, self.tiny, self.ranks = args.rounds, args.quick, args.tiny, args.ranks
        self.group, self.commands, self.notes = None, [], []

    def start(self, group):
        self.group, self.commands, self.notes = group, [], []

    def note(self, text):
        self.notes.append(text)

    def run(self, cmd, capture=False):
        self.commands.append(" ".join(cmd))
        print("# " + " ".join(cmd), file=self.log, flush=True)
        r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else self.log, stderr=self.log,
                           text=True, check=True)
        if capture:
            self.log.write(r.stdout)
            return r.stdout
        return None

    def gbench(self, binary, filt, min_time, prefix=()):
        exe = os.path.join(self.build, "bin", binary)
        out = os.path.join(self.raw, f"{binary}.json")
        cmd, data = gbench.run(exe, out, filt, self.rounds, min_time, prefix=prefix, log=self.log)
        self.commands.append(" ".join(cmd))
        return data

    def spora(self):
        exe = os.path.join(self.build, "bin", "spora")
        if not os.path.exists(exe):
            raise FileNotFoundError(f"{exe} is not built (ninja -C {self.build} spora_cli)")
        return exe

    def timed(self, fn, label):
        """Runs fn (a simulation through a paper's run.py), records it as a command."""
        self.commands.append(label)
        print(f"# {label}", file=self.log, flush=True)
        return fn()


def default_out():
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    return os.path.join(ROOT, "bench-results", f"{stamp}-{platform.node()}")


def run_suite(args):
    out = os.path.abspath(args.out or default_out())
    os.makedirs(os.path.join(out, "raw"), exist_ok=True)
    selected = args.only.split(",") if args.only else list(groups.GROUPS)
    unknown = [g for g in selected if g not in groups.GROUPS]
    if unknown:
        sys.exit(f"spora bench: unknown group(s) {', '.join(unknown)}; the groups are "
                 f"{', '.join(groups.GROUPS)}")
    started = time.time()
    report = {"schema": SCHEMA_ID, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "command": args.command_line, "quick": args.quick, "tiny": args.tiny,
        "rounds": args.rounds, "build": os.path.abspath(args.build),
        "machine": machine.describe(ROOT, args.build), "groups": {}, "figures": []}
    with open(os.path.join(out, "log.txt"), "w") as log:
        ctx = Context(args, out, log)
        for name in selected:
            ctx.start(name)
            t0, meter = time.time(), machine.BackgroundMeter()
            print(f"spora bench: {name} ...", file=sys.stderr, flush=True)
            entry = {"status": "ran"}
            try:
                figs = groups.GROUPS[name](ctx)
                report["figures"] += figs
                entry["figures"] = len(figs)
            except groups.Skip as e:
                entry = {"status": "skipped", "note": str(e)}
            except Exception as e:  # a failed group is reported; the others still run
                traceback.print_exc(file=log)
                entry = {"status": "failed", "note": f"{type(e).__name__}: {e} (see raw/../log.txt)"}
            entry["seconds"] = round(time.time() - t0, 1)
            background = meter.cores()
            if background is not None:
                entry["background_cores"] = background
            entry["commands"] = ctx.commands
            if ctx.notes:
                entry["note"] = "; ".join(([entry["note"]] if "note" in entry else []) + ctx.notes)
            report["groups"][name] = entry
            print(f"spora bench: {name} {entry['status']} in {entry['seconds']} s; other processes used "
                  f"{entry.get('background_cores', '?')} cores"
                  + (f" ({entry['note']})" if "note" in entry else ""), file=sys.stderr, flush=True)
    report["seconds"] = round(time.time() - started, 1)
    problems = schema.validate(report, schema.load(SCHEMA_PATH))
    if problems:
        sys.exit("spora bench: the report does not match its schema:\n  " + "\n  ".join(problems))
    path = os.path.join(out, "report.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    history = report_html.load_history(os.path.dirname(out), exclude=path)
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(report_html.render(report, history))
    print_summary(report, out)
    return 1 if any(g["status"] == "failed" for g in report["groups"].values()) else 0


def print_summary(report, out):
    for f in report["figures"]:
        verdict = f" [{f['verdict']} {f['target']['op']} {f['target']['value']:g}]" if "verdict" in f else ""
        print(f"{f['id']:<58} {f['median']:>12.4g} {f['unit']:<8} "
              f"(min {f['min']:.4g}, max {f['max']:.4g}, n {f['n']}){verdict}")
    for name, g in report["groups"].items():
        if g["status"] != "ran":
            print(f"{name}: {g['status']}: {g.get('note', '')}")
    print(f"spora bench: wrote {out}/report.json and report.html in {report['seconds']} s")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="spora bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="report folder (default bench-results/<date>-<time>-<host>/)")
    ap.add_argument("--quick", action="store_true",
                    help=f"fewer rounds ({ROUNDS['quick']}) and benchmarks, shorter timings: under 5 minutes on 2 cores")
    ap.add_argument("--tiny", action="store_true",
                    help="the smallest sizes and timings (the suite's own test), implies --quick")
    ap.add_argument("--only", default="", help=f"comma list of groups: {','.join(groups.GROUPS)}")
    ap.add_argument("--rounds", type=int, help=f"rounds per figure (default {ROUNDS['full']}; --quick: {ROUNDS['quick']})")
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks of the collectives group (default 2)")
    ap.add_argument("--build", default=os.environ.get("SPORA_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two report.json files")
    ap.add_argument("--threshold", type=float, default=regress.THRESHOLD,
                    help=f"with --compare: the smallest relative change that counts (default {regress.THRESHOLD})")
    ap.add_argument("--validate", metavar="REPORT", help="check a report.json against the schema")
    args = ap.parse_args(argv)
    if args.compare:
        return regress.main(*args.compare, threshold=args.threshold)
    if args.validate:
        with open(args.validate) as f:
            problems = schema.validate(json.load(f), schema.load(SCHEMA_PATH))
        for p in problems:
            print(f"{args.validate}: {p}")
        if not problems:
            print(f"{args.validate}: valid ({SCHEMA_ID})")
        return 1 if problems else 0
    args.quick = args.quick or args.tiny
    if args.rounds is None:
        args.rounds = ROUNDS["quick" if args.quick else "full"]
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, not {args.rounds}")
    args.command_line = "./spora bench " + " ".join(argv)
    return run_suite(args)


if __name__ == "__main__":
    sys.exit(main())
