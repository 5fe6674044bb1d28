#!/usr/bin/env python3
"""The Spora Jupyter kernel, installed by `spora jupyter install` into a fresh Jupyter data
folder and driven by jupyter_client as a notebook drives it: names persist from cell to cell,
a cell of definitions and statements, output streamed, an error with its source line and
caret that leaves the session usable, `:type`, the curves of `save_curves` shown inline as SVG,
an interrupt that stops a running cell and keeps the names, a session that dies and is
replaced, completion, is_complete, kernel_info.

    kernel_test.py SPORA PYTHON
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

from jupyter_client import KernelManager

spora, python = os.path.abspath(sys.argv[1]), sys.argv[2]
tmp = tempfile.mkdtemp(prefix="spora-jupyter-")
env = dict(os.environ, JUPYTER_DATA_DIR=os.path.join(tmp, "data"),
           JUPYTER_RUNTIME_DIR=os.path.join(tmp, "runtime"), JUPYTER_PATH="",
           IPYTHONDIR=os.path.join(tmp, "ipython"), JUPYTER_CONFIG_DIR=os.path.join(tmp, "config"),
           SPORA_HISTORY=os.path.join(tmp, "history"))
os.environ.update(env)

r = subprocess.run([spora, "jupyter", "install", "--python", python], capture_output=True,
                   text=True, env=env, timeout=60)
assert r.returncode == 0, r.stderr
spec_path = os.path.join(tmp, "data", "kernels", "spora", "kernel.json")
with open(spec_path) as f:
    spec = json.load(f)
assert spec["argv"][0] == python and spec["argv"][-1] == "{connection_file}", spec
assert spec["env"]["SPORA_BIN"] == os.path.realpath(spora), spec
assert spec["language"] == "spora" and spec["interrupt_mode"] == "signal", spec
assert os.path.exists(os.path.join(tmp, "data", "kernels", "spora", "spora_kernel.py"))

# A Python without ipykernel is refused with the reason.
r = subprocess.run([spora, "jupyter", "install", "--python", "/bin/false"], capture_output=True,
                   text=True, env=env, timeout=60)
assert r.returncode == 1 and "cannot import ipykernel" in r.stderr, r.stderr

work = os.path.join(tmp, "work")
os.makedirs(work)
km = KernelManager(kernel_name="spora")
km.start_kernel(cwd=work)
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=60)


def stdout_of(messages):
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def session_pid():
    """The kernel's `spora repl --framed` child."""
    child = subprocess.run(["pgrep", "-P", str(km.provisioner.process.pid), "-f", "repl --framed"],
                           capture_output=True, text=True).stdout.split()
    assert len(child) == 1, child
    return int(child[0])


def shell_reply(msg_id, timeout=60):
    """The reply to request msg_id (wait_for_ready's kernel_info requests may have left
    replies of their own in the queue)."""
    deadline = time.time() + timeout
    while True:
        reply = kc.get_shell_msg(timeout=max(1, deadline - time.time()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def execute(code, timeout=60, when=None):
    """Runs a cell; returns (reply content, [iopub messages of the cell]). With when =
    (text, action), calls action() once the cell has printed that text."""
    # (stop_on_error=False: after an error ipykernel aborts the requests that reach it in the
    # moment after, and this test sends its next cell as soon as a reply comes)
    msg_id = kc.execute(code, stop_on_error=False)
    messages = []
    deadline = time.time() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
        if when and when[0] in stdout_of(messages):
            when[1]()
            when = None
    return shell_reply(msg_id, timeout), messages


try:
    info = shell_reply(kc.kernel_info())
    assert info["language_info"]["name"] == "spora", info
    assert info["language_info"]["file_extension"] == ".sp", info

    reply, msgs = execute("let x = ones([3]) * 2.0\nx + 1.0")
    assert reply["status"] == "ok", reply
    assert stdout_of(msgs) == "[3.0, 3.0, 3.0]\n", msgs

    # A cell of a definition and statements; the names of earlier cells are there.
    reply, msgs = execute("def sq(v) = v * v\nprint(sum(sq(x)))\nfor i in range(2) {\n"
                          "    print(i, x[i])\n}")
    assert reply["status"] == "ok", reply
    assert stdout_of(msgs) == "12.0\n0 2.0\n1 2.0\n", stdout_of(msgs)

    reply, msgs = execute(":type x @ ones([3, 2])")
    assert stdout_of(msgs) == "x @ ones([3, 2]): f32[2]\n", stdout_of(msgs)

    # A run-time error: what ran before it printed, the error has its line and caret, the
    # statements after it do not run.
    reply, msgs = execute("print(1)\nx[7]\nprint(2)")
    assert reply["status"] == "error", reply
    assert stdout_of(msgs) == "1\n", stdout_of(msgs)
    errors = [m for m in msgs if m["msg_type"] == "error"]
    assert len(errors) == 1, msgs
    tb = "\n".join(errors[0]["content"]["traceback"])
    assert "In [%d]:2:1: error: index 7 is out of range for axis 0 of size 3" % (
        reply["execution_count"]) in tb, tb
    assert "\nx[7]\n^~~~" in tb, tb
    # A compile error.
    reply, msgs = execute("undefined_name + 1")
    assert reply["status"] == "error" and "unknown name 'undefined_name'" in reply["evalue"], reply
    reply, msgs = execute("x")
    assert reply["status"] == "ok" and stdout_of(msgs) == "[2.0, 2.0, 2.0]\n", (reply, msgs)

    # Curves written by save_curves are shown inline.
    reply, msgs = execute('for e in range(3) {\n    log_epoch(e + 1, loss=1.0 / (e + 1.0))\n}\n'
                          'save_curves("runs/curves")')
    assert reply["status"] == "ok", reply
    shown = [m for m in msgs if m["msg_type"] == "display_data"]
    assert len(shown) == 1, msgs
    svg = shown[0]["content"]["data"]["image/svg+xml"]
    assert "<svg" in svg and "loss" in svg, svg[:200]
    assert shown[0]["content"]["data"]["text/plain"] == os.path.join(work, "runs", "curves.svg")
    assert os.path.exists(os.path.join(work, "runs", "curves.csv"))

    # An interrupt stops a running cell between two ops; the names stay.
    started = time.time()
    # ("running" once y has changed: the interrupt may land at the very next op)
    reply, msgs = execute('var y = x\nfor i in range(100000000) {\n    y = y + 1.0\n'
                          '    if i == 1 { print("running") }\n}',
                          when=("running\n", km.interrupt_kernel))
    assert reply["status"] == "error" and "interrupted" in reply["evalue"], reply
    assert time.time() - started < 30, time.time() - started
    reply, msgs = execute("sum(y) > sum(x)")
    assert reply["status"] == "ok" and stdout_of(msgs) == "true\n", (reply, stdout_of(msgs))

    # A session that dies between cells is reported, and the next cell runs in a new one.
    child = [str(session_pid())]
    os.kill(int(child[0]), 9)
    # Dead once it is a zombie whose other threads (OpenBLAS's) are gone too: only then can
    # the kernel's wait see it (the kernel has not waited for it yet).
    while True:
        with open("/proc/%s/stat" % child[0]) as f:
            zombie = f.read().split(")")[-1].split()[0] == "Z"
        if zombie and len(os.listdir("/proc/%s/task" % child[0])) == 1:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    reply, msgs = execute("x")
    assert reply["status"] == "error" and "unknown name 'x'" in reply["evalue"], reply
    said = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    assert "the Spora session had ended (exit status -9)" in said, msgs
    # A session that dies while a cell runs fails that cell; the next starts a new one.
    reply, msgs = execute('let z = 1.0\nprint("running")\nvar s = ones([2])\n'
                          'for i in range(100000000) {\n    s = s + z\n}',
                          when=("running\n", lambda: os.kill(session_pid(), 9)))
    assert reply["status"] == "error" and "the Spora session ended (exit status -9)" in (
        reply["evalue"]), reply
    reply, msgs = execute("ones([2])")
    assert reply["status"] == "ok" and stdout_of(msgs) == "[1.0, 1.0]\n", (reply, msgs)

    # Completion of the name before the cursor from the session's names (this session's: the
    # one before was killed above).
    reply, msgs = execute("def sq(v) = v * v")
    assert reply["status"] == "ok", reply
    reply = shell_reply(kc.complete("print(su", 8))
    assert "sum" in reply["matches"] and reply["cursor_start"] == 6, reply
    reply = shell_reply(kc.complete("let q = x + sq(", 14))  # the cell's own `sq` first
    assert reply["matches"] == ["sq", "sqrt", "square", "squeeze"], reply
    assert reply["cursor_start"] == 12 and reply["cursor_end"] == 14, reply
    assert shell_reply(kc.complete("nn.Den", 6))["matches"] == []
    assert shell_reply(kc.is_complete("def f(v) {\n    v"))["status"] == "incomplete"
    assert shell_reply(kc.is_complete("x + 1.0"))["status"] == "complete"
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=False)
    del kc, km  # now, not in the interpreter's teardown (where jupyter_client's __del__ logs)
print("spora jupyter kernel: install, persistent names, output, errors, :type, inline curves, "
      "interrupt, restart, completion, is_complete")
