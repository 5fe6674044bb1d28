#!/usr/bin/env python3
"""`spora repl` on a terminal (a pseudo-terminal here), driven by the bytes a terminal sends:
line editing with the arrows, Backspace, Ctrl-A, Tab completion, history from the history file
and from the session on Up, Ctrl-C that drops a line, Ctrl-C that stops a running cell and keeps the names,
Ctrl-D that leaves.

    repl_tty_test.py SPORA
"""
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

spora = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="spora-repl-tty-")
history = os.path.join(tmp, "history")
with open(history, "w") as f:
    f.write("let preloaded = 7\n")
env = dict(os.environ, SPORA_HISTORY=history, TERM="xterm")
master, slave = pty.openpty()
proc = subprocess.Popen([spora, "repl"], stdin=slave, stdout=slave, stderr=slave, env=env,
                        start_new_session=True, close_fds=True,
                        preexec_fn=lambda: __import__("fcntl").ioctl(0, __import__("termios").TIOCSCTTY, 0))
os.close(slave)
seen = b""


def expect(text, timeout=30):
    """Reads the terminal until `text` has appeared after what earlier calls consumed."""
    global seen
    want = text.encode()
    deadline = time.time() + timeout
    while want not in seen:
        left = deadline - time.time()
        assert left > 0, "waited for %r; the terminal shows:\n%r" % (text, seen[-600:])
        r, _, _ = select.select([master], [], [], left)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                chunk = b""
            assert chunk, "the REPL ended while waiting for %r: %r" % (text, seen[-600:])
            seen += chunk
    seen = seen[seen.index(want) + len(want):]


def send(keys):
    os.write(master, keys.encode())


LEFT, UP = "\x1b[D", "\x1b[A"


def prompt(kind=">>> "):
    """Waits for a new prompt: the line editor is reading (keys sent before it would meet the
    terminal's own line editing, as they do in any terminal program)."""
    expect("\r" + kind + "\x1b[K")  # the editor draws an empty line


prompt()
send(UP + "\r")  # the history file's line
prompt()
send("preloaded + 1\r")
expect("8\r\n")
prompt()
send("prel\t + 2\r")  # Tab completes `preloaded`
expect("9\r\n")
prompt()
send("let a = 41\r")
prompt()
send("a - 1" + LEFT + LEFT + "\x7f+\r")  # a - 1 -> a + 1
expect("42\r\n")
prompt()
send(UP + "\x012 * \r")  # Up recalls `a + 1`; Ctrl-A, then `2 * ` before it
expect("83\r\n")
prompt()
send("this line is dropped\x03")
expect("^C\r")
prompt()
send("def f(v) {\r")
prompt("... ")
send("    return v * 2\r")
prompt("... ")
send("}\r")
prompt()
send("f(a)\r")
expect("82\r\n")
prompt()
# Ctrl-C while a cell runs: the terminal is back in its usual mode, so it is SIGINT.
send("var y = 0.0\r")
prompt()
send("for i in range(100000000) {\r")
prompt("... ")
send("    y = y + 1.0\r")
prompt("... ")
send("    if i == 2 { print(\"running\") }\r")  # once y > 1 (Ctrl-C may stop the next op)
prompt("... ")
send("}\r")
expect("running\r\n")
send("\x03")
expect("interrupted (SIGINT)")
prompt()
send("y > 1.0\r")
expect("true\r\n")
prompt()
send("\x04")  # Ctrl-D on an empty line
proc.wait(timeout=30)
assert proc.returncode == 0, proc.returncode
with open(history) as f:
    assert "let a = 41\n" in f.read()
print("spora repl on a terminal: editing, completion, history, Ctrl-C on a line and on a running cell, Ctrl-D")
