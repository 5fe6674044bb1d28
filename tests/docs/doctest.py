#!/usr/bin/env python3
"""Runs the code blocks of Spora's Markdown documentation and compares their output.

    doctest.py --spora build/bin/spora docs/tutorial/01_tensors.md [more.md ...]
    doctest.py --spora build/bin/spora --update docs/reference/syntax.md   # rewrite outputs
    doctest.py --spora build/bin/spora --primitives docs/primitives.md     # generated table

A page's fenced blocks, by their info string:

  ```spora [flags]     a program: written to a file and run with `spora run`, in graph mode
                       and in eager mode (`--mode eager`); both must print the ```output block
                       that follows it (stdout only). Flags:
                         graph-only / eager-only   run in that mode only
                         error                     the run must fail; the output block holds
                                                   what it prints on stderr (graph mode)
                         norun                     not run (a fragment); no output block
                         file=NAME.sp              the file's name (default example.sp), kept
                                                   for the page's later blocks
  ```output            what the block above prints.
  ```console           a terminal session: each `$ command` runs in bash in the page's folder
                       (where its file= programs are), `spora` being the built binary and
                       $PAGE_DIR the folder of the Markdown page itself (for files kept beside
                       it); the lines up to the next `$` are its stdout and stderr together.
  ```LANG file=NAME    any other block with a file= name (```yaml file=cluster.yaml, ```json,
                       ```text file=ring.sched): written to that file in the page's folder,
                       not run; the commands after it read it.

A page whose text contains the line `<!-- doctest: graph-only -->` runs all its programs in
graph mode only (pages about syntax and compile-time checks, whose forms the golden tests
already run in both modes).

In an expected output a line `...` stands for any number of lines (zero included). Trailing
spaces are ignored. Numbers with a fraction or an exponent match within a relative 1e-6 (a few
f32 roundings: fused kernels and BLAS sum in another order on another CPU); the rest of a line,
integers included, matches exactly. Every block of a page runs in one temporary folder, in page order.
Exit status 1 when any output differs, with `FILE:LINE: ...` and a diff per difference.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(.*)$")
PAGE_GRAPH_ONLY = "<!-- doctest: graph-only -->"
TIMEOUT_S = 120


class Block:
    def __init__(self, lang, flags, attrs, line, body):
        self.lang, self.flags, self.attrs, self.line = lang, flags, attrs, line
        self.text = "\n".join(body) + "\n"
        self.count = len(body)  # lines between the fences
        self.output = None  # the Block of the ```output that follows a ```spora block


def parse_blocks(path):
    """The fenced blocks of a Markdown file, each ```output attached to the block before it."""
    blocks, lines = [], open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        words = m.group(1).split()
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}:{start}: unclosed code block")
        i += 1
        lang = words[0] if words else ""
        flags = {w for w in words[1:] if "=" not in w}
        attrs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        block = Block(lang, flags, attrs, start, body)
        if lang == "output":
            prev = blocks[-1] if blocks else None
            if prev is None or prev.lang != "spora" or prev.output is not None or "norun" in prev.flags:
                raise SystemExit(f"{path}:{start}: an output block must follow a runnable spora block")
            prev.output = block
            continue
        blocks.append(block)
    return blocks


FLOAT = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")
FLOAT_REL = 1e-6


def line_matches(expected, actual):
    """Equal lines, or equal but for floats within FLOAT_REL of each other."""
    if expected == actual:
        return True
    if FLOAT.sub("#", expected) != FLOAT.sub("#", actual):
        return False
    for a, b in zip(FLOAT.findall(expected), FLOAT.findall(actual)):
        x, y = float(a), float(b)
        if abs(x - y) > FLOAT_REL * max(abs(x), abs(y)):
            return False
    return True


def matches(expected, actual):
    """Line-by-line matching (line_matches) where an expected line `...` matches any run of
    lines."""
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            r = j == len(actual)
        elif expected[i] == "...":
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and line_matches(expected[i], actual[j]) and go(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return go(0, 0)


def normalise(text):
    lines = [l.rstrip() for l in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run(cmd, cwd, env, stderr):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr,
                           timeout=TIMEOUT_S, shell=isinstance(cmd, str), executable="/bin/bash"
                           if isinstance(cmd, str) else None)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {TIMEOUT_S} s"
    except OSError as e:  # the binary is missing or not executable
        return 126, "", str(e)
    return p.returncode, p.stdout.decode("utf-8", "replace"), (p.stderr or b"").decode("utf-8", "replace")


class Page:
    def __init__(self, path, spora, update):
        self.path, self.spora, self.update = path, spora, update
        self.failures = 0
        self.ran = 0
        self.graph_only = False
        self.rewrites = {}  # line of an output block's first body line -> new body lines

    def fail(self, line, what, expected, actual):
        self.failures += 1
        print(f"{self.path}:{line}: {what}")
        for d in difflib.unified_diff(expected, actual, "expected", "actual", lineterm=""):
            print("    " + d)

    def check(self, block_out, line, what, actual_text):
        actual = normalise(actual_text)
        expected = normalise(block_out.text) if block_out else []
        if matches(expected, actual):
            return
        if self.update and block_out is not None and "..." not in expected:
            self.rewrites[block_out.line] = (block_out.count, actual)
            return
        self.fail(line, what, expected, actual)

    def run_program(self, block, cwd, env):
        name = block.attrs.get("file", "example.sp")
        with open(os.path.join(cwd, name), "w", encoding="utf-8") as f:
            f.write(block.text)
        if "norun" in block.flags:
            return
        if block.output is None:
            self.fail(block.line, "a spora block without an ```output block after it (flag norun if it is a fragment)", [], [])
            return
        if "error" in block.flags:
            rc, out, err = run([self.spora, "run", name], cwd, env, subprocess.PIPE)
            self.ran += 1
            if rc == 0:
                self.fail(block.line, "flagged error but the program ran without one", [], normalise(out))
            self.check(block.output, block.line, "error output differs", err)
            return
        modes = ["graph", "eager"]
        if "graph-only" in block.flags or self.graph_only:
            modes = ["graph"]
        if "eager-only" in block.flags:
            modes = ["eager"]
        for mode in modes:
            rc, out, err = run([self.spora, "run", "--mode", mode, name], cwd, env, subprocess.PIPE)
            self.ran += 1
            if rc != 0:
                self.fail(block.line, f"{mode} mode: exit status {rc}", [], normalise(err))
                continue
            self.check(block.output, block.line, f"{mode} mode: output differs", out)

    def write_file(self, block, cwd):
        name = block.attrs["file"]
        if os.path.isabs(name) or ".." in name.split("/"):
            self.fail(block.line, f"file={name}: the name must stay in the page's folder", [], [])
            return
        os.makedirs(os.path.dirname(os.path.join(cwd, name)) or cwd, exist_ok=True)
        with open(os.path.join(cwd, name), "w", encoding="utf-8") as f:
            f.write(block.text)

    def run_console(self, block, cwd, env):
        # Split into (command, expected lines, line number) steps.
        steps, line = [], block.line
        for k, text in enumerate(block.text.rstrip("\n").split("\n")):
            if text.startswith("$ "):
                steps.append([text[2:], [], block.line + k])
            elif steps:
                steps[-1][1].append(text)
            elif text.strip():
                self.fail(block.line + k, "a console block starts with a `$ command` line", [], [])
                return
        for cmd, expected, line in steps:
            rc, out, _ = run(cmd, cwd, env, subprocess.STDOUT)
            self.ran += 1
            actual = normalise(out)
            if not matches(normalise("\n".join(expected)), actual):
                if self.update and "..." not in expected:
                    self.rewrites[line + 1] = (len(expected), actual)
                else:
                    self.fail(line + 1, f"`{cmd}`: output differs (exit status {rc})", normalise("\n".join(expected)), actual)

    def run(self):
        blocks = parse_blocks(self.path)
        self.graph_only = PAGE_GRAPH_ONLY in open(self.path, encoding="utf-8").read().split("\n")
        cwd = tempfile.mkdtemp(prefix="spora-doctest-")
        bindir = os.path.join(cwd, ".bin")
        os.mkdir(bindir)
        os.symlink(self.spora, os.path.join(bindir, "spora"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                   PAGE_DIR=os.path.dirname(os.path.abspath(self.path)))
        try:
            for b in blocks:
                if b.lang == "spora":
                    self.run_program(b, cwd, env)
                elif b.lang == "console":
                    self.run_console(b, cwd, env)
                elif "file" in b.attrs:
                    self.write_file(b, cwd)
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
        if self.rewrites:
            self.write_rewrites()

    def write_rewrites(self):
        lines = open(self.path, encoding="utf-8").read().split("\n")
        for start in sorted(self.rewrites, reverse=True):  # 1-based first body line
            count, new = self.rewrites[start]
            lines[start:start + count] = new  # start is the fence's line number, 0-based body
        open(self.path, "w", encoding="utf-8").write("\n".join(lines))
        print(f"{self.path}: rewrote {len(self.rewrites)} output(s)")


def check_primitives(spora, path):
    rc, out, err = run([spora, "ops", "--markdown"], None, None, subprocess.PIPE)
    if rc != 0:
        print(f"spora ops --markdown failed: {err}")
        return 1
    committed = open(path, encoding="utf-8").read()
    if out == committed:
        print(f"{path}: equal to `spora ops --markdown`")
        return 0
    print(f"{path}: differs from `spora ops --markdown` (regenerate: spora ops --markdown > {path})")
    for d in difflib.unified_diff(committed.split("\n"), out.split("\n"), path, "spora ops --markdown", lineterm=""):
        print("    " + d)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spora", required=True, help="the spora binary")
    ap.add_argument("--update", action="store_true", help="rewrite differing outputs in place")
    ap.add_argument("--primitives", help="compare this file with `spora ops --markdown`")
    ap.add_argument("pages", nargs="*")
    a = ap.parse_args()
    spora = os.path.abspath(a.spora)
    if a.primitives:
        return check_primitives(spora, a.primitives)
    failures = 0
    for path in a.pages:
        page = Page(path, spora, a.update)
        page.run()
        failures += page.failures
        print(f"{path}: {page.ran} runs, {page.failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
