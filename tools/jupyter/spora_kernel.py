"""The Spora kernel for Jupyter: each notebook cell runs in one eager Spora session.

`spora jupyter install` writes this file and its kernel.json into a Jupyter kernels folder;
Jupyter starts it with the Python that has ipykernel, and it runs `spora repl --framed`
($SPORA_BIN) as a child: a cell goes to the child's stdin followed by a line of 0x1e and the
cell's name for diagnostics ("In [3]"), and the child answers with what the cell printed, then
0x1e and one line of JSON
({"status", "error", "files"}; tools/cmd_repl.cpp). Names persist from cell to cell. What the
cell prints streams to the notebook as it comes; SVG and PNG files the cell wrote
(`save_curves`) are shown inline; errors are shown with their source line and caret.
Interrupting the kernel (SIGINT) stops the running cell between two ops; the names stay.
"""

import base64
import codecs
import json
import os
import re
import signal
import subprocess
import sys

from ipykernel.kernelbase import Kernel

SEPARATOR = "\x1e"


def bracket_depth(text):
    """The bracket depth at the end of `text` (strings and comments skipped), as the REPL
    counts it."""
    depth, quote, i = 0, None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return depth


class SporaKernel(Kernel):
    implementation = "spora"
    implementation_version = "1.0"
    language = "spora"
    language_version = "1.0"
    language_info = {
        "name": "spora",
        "mimetype": "text/x-spora",
        "file_extension": ".sp",
        "pygments_lexer": "text",
        "codemirror_mode": "text/x-rustsrc",
    }
    banner = "Spora: cells run in eager mode and keep their names (:type, :ir, :help)"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.spora = os.environ.get("SPORA_BIN", "spora")
        self.child = None
        self.start_session()

    def start_session(self):
        self.child = subprocess.Popen(
            [self.spora, "repl", "--framed"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=0,
        )

    def stream(self, text, silent, collect=None):
        if collect is not None:
            collect.append(text)
        elif text and not silent:
            self.send_response(self.iopub_socket, "stream", {"name": "stdout", "text": text})

    def show_file(self, path):
        data = {"text/plain": path}
        try:
            if path.endswith(".svg"):
                with open(path, encoding="utf-8", errors="replace") as f:
                    data["image/svg+xml"] = f.read()
            elif path.endswith(".png"):
                with open(path, "rb") as f:
                    data["image/png"] = base64.b64encode(f.read()).decode("ascii")
            else:
                return
        except OSError:
            return
        self.send_response(self.iopub_socket, "display_data", {"data": data, "metadata": {}})

    def read_record(self, silent, collect=None):
        """Streams the cell's output until its record (into `collect` instead, when given);
        None when the session ended."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self.child.stdout.fileno()
        text = ""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                self.stream(text + decoder.decode(b"", final=True), silent, collect)
                return None
            text += decoder.decode(chunk)
            at = text.find(SEPARATOR)
            if at < 0:
                self.stream(text, silent, collect)
                text = ""
                continue
            self.stream(text[:at], silent, collect)
            rest = text[at + 1:]
            while "\n" not in rest:
                more = os.read(fd, 65536)
                if not more:
                    return None
                rest += decoder.decode(more)
            return json.loads(rest[: rest.index("\n")])

    def do_execute(self, code, silent, store_history=True, user_expressions=None,
                   allow_stdin=False):
        if self.child is not None and self.child.poll() is not None:
            # It ended between cells (a crash, a kill): say so before this cell runs anew.
            if not silent:
                self.send_response(self.iopub_socket, "stream", {
                    "name": "stderr",
                    "text": "the Spora session had ended (exit status %d); this cell runs in a "
                            "new one, without the names defined before\n" % self.child.returncode})
            self.child = None
        if self.child is None:
            self.start_session()
        lines = code.replace(SEPARATOR, " ").split("\n")
        # Jupyter's interrupt (SIGINT) goes on to the child, which stops the cell at its next
        # op and answers with its record. No KeyboardInterrupt here: raised just after a read
        # returned, it would lose what the read got.
        child = self.child
        previous = signal.signal(signal.SIGINT, lambda *_: child.send_signal(signal.SIGINT))
        try:
            name = "In [%d]" % self.execution_count
            self.child.stdin.write(
                ("\n".join(lines) + "\n" + SEPARATOR + name + "\n").encode("utf-8"))
            self.child.stdin.flush()
            record = self.read_record(silent)
        except OSError:
            record = None
        finally:
            signal.signal(signal.SIGINT, previous)
        if record is None:
            status = self.child.wait()
            self.child = None
            record = {
                "status": "error",
                "files": [],
                "error": "the Spora session ended (exit status %d); the next cell starts a new "
                         "one, without the names defined before\n" % status,
            }
        for path in record.get("files", []):
            if not silent:
                self.show_file(path)
        if record["status"] == "ok":
            return {"status": "ok", "execution_count": self.execution_count,
                    "payload": [], "user_expressions": {}}
        error = record.get("error", "")
        lines = error.rstrip("\n").split("\n") if error else ["error"]
        content = {"ename": "SporaError", "evalue": lines[0], "traceback": lines}
        if not silent:
            self.send_response(self.iopub_socket, "error", content)
        return dict(content, status="error", execution_count=self.execution_count)

    def do_complete(self, code, cursor_pos):
        """The session's names that start with the name before the cursor (none after a '.':
        a module's or a record's members are not listed)."""
        before = code[:cursor_pos]
        m = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", before)
        matches = []
        if m and not before[:m.start()].endswith(".") and self.child is not None and (
                self.child.poll() is None):
            try:
                self.child.stdin.write((":complete %s\n%s\n" % (m.group(0), SEPARATOR))
                                       .encode("utf-8"))
                self.child.stdin.flush()
                out = []
                record = self.read_record(True, out)
                if record is not None and record["status"] == "ok":
                    matches = "".join(out).split()
            except OSError:
                pass
        start = m.start() if m else cursor_pos
        return {"status": "ok", "matches": matches, "cursor_start": start,
                "cursor_end": cursor_pos, "metadata": {}}

    def do_is_complete(self, code):
        if bracket_depth(code) > 0:
            return {"status": "incomplete", "indent": "    "}
        return {"status": "complete"}

    def do_shutdown(self, restart):
        if self.child is not None and self.child.poll() is None:
            try:
                self.child.stdin.close()
                self.child.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.child.kill()
                self.child.wait()
        self.child = None
        return {"status": "ok", "restart": restart}


if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=SporaKernel)
