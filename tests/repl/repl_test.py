#!/usr/bin/env python3
"""`spora repl` on a scripted session (stdin not a terminal: no prompts): names persist from
cell to cell, an expression prints its value, definitions (a later one replaces an earlier),
models and imports, multi-line cells, :type and :ir, compile and run-time errors that leave
the session usable, :history, and the input ending inside a bracket (exit 1).

    repl_test.py SPORA
"""
import os
import subprocess
import sys
import tempfile

spora = sys.argv[1]
session = """let x = ones([3]) * 2.0
x + 1.0
def sq(v) = v * v
print(sq(x), sum(sq(x)))
def sq(v) = v * v * v
sum(sq(x))
:type x @ ones([3, 2])
:type (x, 3)
import std.nn
let d = nn.Dense(3, 2, seed=0)
d(x).shape
model Scale(n: int) {
    param w: f32[n] = ones()
    def forward(v) = v * w
}
let s = Scale(3)
s(x)
:ir x * 3.0
for i in range(2) {
    print(i, x[i])
}
undefined_name + 1
x[7]
var total = 0.0
total += sum(x)
total
grad(fn (v) => sum(v * v))(x)
:history
"""
want_stdout = """[3.0, 3.0, 3.0]
[4.0, 4.0, 4.0] 12.0
24.0
x @ ones([3, 2]): f32[2]
(x, 3): (f32[3], int 3)
(2,)
[2.0, 2.0, 2.0]
%{k} = constant 3.0 : f32
%{k1} = mul(%0, %{k}) : f32[3]
0 2.0
1 2.0
6.0
[4.0, 4.0, 4.0]
"""
env = dict(os.environ, SPORA_HISTORY=os.path.join(tempfile.mkdtemp(), "history"))
r = subprocess.run([spora, "repl"], input=session, capture_output=True, text=True, timeout=120,
                   env=env)
assert r.returncode == 0, (r.returncode, r.stderr)
out = r.stdout.splitlines()
# the cells (not the commands), as :history prints them (a multi-line cell keeps its lines),
# end the output
history = [l for l in session.strip().splitlines() if not l.startswith(":")]
cells_start = len(out) - len(history)
assert out[cells_start:] == history, out[cells_start:]
shown = "\n".join(out[:cells_start]) + "\n"
# :ir's node numbers depend on the session's graph so far: match them by shape
lines = shown.splitlines()
ir = [l for l in lines if l.startswith("%")]
assert len(ir) == 2 and ir[0].endswith("= constant 3.0 : f32") and "= mul(%0, " in ir[1], ir
k = ir[0].split()[0][1:]
expect = want_stdout.replace("{k}", k).replace("{k1}", str(int(k) + 1))
assert shown == expect, "stdout:\n" + shown + "\nwanted:\n" + expect
assert "error: unknown name 'undefined_name'" in r.stderr, r.stderr
assert "index 7 is out of range for axis 0 of size 3" in r.stderr, r.stderr
with open(env["SPORA_HISTORY"]) as f:
    assert "def sq(v) = v * v * v" in f.read()

# :complete lists the session's names with a prefix: its own and the built-in ones.
r = subprocess.run([spora, "repl"], input="let total_loss = 1.0\ndef sq(v) = v * v\n:complete s\n"
                   ":complete total\n", capture_output=True, text=True, timeout=60, env=env)
names = r.stdout.split()
assert r.returncode == 0 and "sq" in names and "sum" in names and "softmax" in names, r.stdout
assert "total_loss" in names and names == sorted(names) and "x" not in names, names
assert names[-1] == "total_loss", names

r = subprocess.run([spora, "repl"], input="let y = [1.0,\n", capture_output=True, text=True,
                   timeout=60, env=env)
assert r.returncode == 1 and "unclosed bracket" in r.stderr, (r.returncode, r.stderr)
print("spora repl: persistent names, echo, definitions, models, imports, :type, :ir, errors, history")
