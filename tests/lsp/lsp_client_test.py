#!/usr/bin/env python3
"""`spora lsp` driven by a scripted client over stdio (JSON-RPC with Content-Length framing):
initialize, open a program with a shape error (its located diagnostic), fix it with a change
(no diagnostics), then hover (declarations, the types of names, primitives), definition (in the file and
in std), completion and document symbols, a malformed message and an unknown method (errors,
the server stays up), and shutdown/exit (status 0). A program that calls set_mode("eager") and
prints is checked without running: nothing reaches stdout but protocol messages.

    lsp_client_test.py SPORA
"""
import json
import os
import subprocess
import sys
import tempfile

spora = sys.argv[1]
proc = subprocess.Popen([spora, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
next_id = [0]


def send(msg):
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def send_raw(body):
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive():
    headers = {}
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its output"
        line = line.decode().rstrip("\r\n")
        if not line:
            break
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return json.loads(proc.stdout.read(int(headers["content-length"])))


def request(method, params):
    next_id[0] += 1
    send({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
    while True:
        m = receive()
        if m.get("id") == next_id[0]:
            return m
        assert "method" in m, m  # only notifications may come in between


def notification(method):
    while True:
        m = receive()
        assert "id" not in m, f"unexpected response {m}"
        if m["method"] == method:
            return m["params"]


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


folder = tempfile.mkdtemp()
path = os.path.join(folder, "model.sp")
uri = "file://" + path
broken = """import std.nn

# Scales its input.
def scale(x: f32[4], k: f32) = x * k

model Net() {
    param l1 = nn.Dense(4, 3)
    def forward(x) = l1(x)
}

let steps = 3

def main() {
    let net = Net()
    print(scale(ones([3]), 2.0), net(ones([4])), steps)
}
"""
fixed = broken.replace("scale(ones([3])", "scale(ones([4])")

r = request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
caps = r["result"]["capabilities"]
assert caps["hoverProvider"] and caps["definitionProvider"] and caps["documentSymbolProvider"], caps
assert caps["textDocumentSync"]["change"] == 1, caps
notify("initialized", {})

notify("textDocument/didOpen",
       {"textDocument": {"uri": uri, "languageId": "spora", "version": 1, "text": broken}})
diags = notification("textDocument/publishDiagnostics")
assert diags["uri"] == uri, diags
assert len(diags["diagnostics"]) >= 1, diags
d = diags["diagnostics"][0]
assert d["severity"] == 1 and "f32[3]" in d["message"] and "f32[4]" in d["message"], d
assert d["range"]["start"]["line"] == 14, d  # the call on line 15 (0-based 14)

notify("textDocument/didChange",
       {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
diags = notification("textDocument/publishDiagnostics")
assert diags["diagnostics"] == [], diags

# hover: a function (its header and comment), a primitive (signature and doc)
h = request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 12}})
value = h["result"]["contents"]["value"]
assert "def scale(x: f32[4], k: f32) = x * k" in value and "# Scales its input." in value, value
h = request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 20}})
value = h["result"]["contents"]["value"]
assert value.startswith("```spora\nones(") and "primitive" in value, value

# hover on names: their types as the lowering saw them (a parameter, its use, a local model)
for line, char, want in [(3, 10, "x: f32[4]"), (3, 31, "x: f32[4]"), (3, 35, "k: f32"),
                         (13, 8, "net: Net model")]:
    h = request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}})
    value = h["result"]["contents"]["value"]
    assert value == "```spora\n%s\n```" % want, (line, char, value)

# definition: in the file, and nn.Dense in std's nn.sp
g = request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 10}})
assert g["result"]["uri"] == uri and g["result"]["range"]["start"] == {"line": 3, "character": 4}, g
g = request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 19}})
assert g["result"]["uri"].endswith("/nn.sp"), g
g = request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 52}})
assert g["result"]["range"]["start"]["line"] == 10, g  # let steps

# completion: primitives with signatures, the file's functions and models, keywords
c = request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 4}})
items = {i["label"]: i for i in c["result"]["items"]}
assert items["matmul"]["detail"].startswith("matmul(") and items["matmul"]["kind"] == 3, items["matmul"]
assert items["scale"]["kind"] == 3 and items["Net"]["kind"] == 7 and items["while"]["kind"] == 14
assert "Dense" in items, "std.nn's models"

# document symbols, with the model's field and method
s = request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
names = [x["name"] for x in s["result"]]
assert names == ["scale", "Net", "steps", "main"], names
net = s["result"][1]
assert [c["name"] for c in net["children"]] == ["l1", "forward"], net

# a malformed body and an unknown method get errors; the server stays up
send_raw(b"{not json")
e = receive()
assert e["error"]["code"] == -32700 and e["id"] is None, e
e = request("textDocument/rename", {"textDocument": {"uri": uri}})
assert e["error"]["code"] == -32601, e

# an eager program is checked, not run: its print never reaches the protocol stream
eager = os.path.join(folder, "eager.sp")
notify("textDocument/didOpen", {"textDocument": {"uri": "file://" + eager, "languageId": "spora",
                                                  "version": 1,
                                                  "text": 'def main() {\n    set_mode("eager")\n    print(123456789)\n}\n'}})
diags = notification("textDocument/publishDiagnostics")
assert diags["diagnostics"] == [], diags

assert request("shutdown", None)["result"] is None
notify("exit", None)
proc.stdin.close()
assert proc.wait(timeout=10) == 0, proc.returncode
err = proc.stderr.read().decode()
assert "123456789" not in err, err
print("spora lsp: diagnostics, hover, definition, completion, symbols, errors and exit as expected")
