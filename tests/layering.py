#!/usr/bin/env python3
"""The layering of the tree, held by a test: every `#include "..."` of the project's C++ files
(.h .cpp .cu .cuh) is an edge between two top-level folders, and an edge the rules below forbid
fails the test, listed as file:line and the edge.

The libraries, bottom to top (a folder may include its own files and those of the layers below
it, never those above or beside it):

  lang       the front end: parser, AST, diagnostics
  semantics  lowering, the IR, passes, the interpreter, the primitive registry and the types of
             the facets that more than one layer reads (cost.h, rng.h, passes/fusion_kind.h)
  autodiff   reverse and forward mode over the IR
  parallel   layouts, sharding rules, the partitioner, pipeline stages, the strategy search
  backends   runtime, CPU, code generation, CUDA, communicators, the distributed runtime
  sim        the cluster simulator                        (backends and sim: neither includes
                                                           the other)
  ops        the registry's rows: it fills each primitive's facets (shape rule, kernels,
             derivatives, cost, sharding, fusion kind) with types declared in the layers above,
             which read them through semantics/registry.h. No library includes ops/.

The entry points may include every library: tools/ (the `spora` command line), tests/ and
benchmarks/ (ops/ops.h for register_all(), and whatever they exercise). No library includes
an entry point; tools/ and benchmarks/ include no tests/ file. grammar/ has no C++ of its own.

This is the issue's list (semantics to backends/autodiff/sim, autodiff to backends, parallel to
backends/sim, sim to backends, backends to sim, lang to semantics, any layer to ops/) closed under
the order: every edge that points up the list or across between backends and sim.

Includes resolve against the including file's folder, then the repository root (the include
path); those that resolve to neither (system and generated headers) are not edges.

  python3 tests/layering.py [ROOT]        exit 0: no forbidden edge; 1: the list of them
"""
import os
import re
import sys

# Bottom to top; a layer may include the layers before it in this list.
LIBRARIES = ["lang", "semantics", "autodiff", "parallel", "backends", "sim", "ops"]
# Layers at the same height that must not include each other.
SIBLINGS = {("backends", "sim"), ("sim", "backends")}
# Entry points: they may include any library. Their own edges are below.
ENTRY_POINTS = ["tools", "tests", "benchmarks"]
ENTRY_FORBIDDEN = {"tools": {"tests"}, "benchmarks": {"tests"}, "tests": set()}
FOLDERS = LIBRARIES + ENTRY_POINTS + ["grammar"]

EXTENSIONS = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def forbidden(src, dst):
    """Why the edge src -> dst is forbidden, or None."""
    if src == dst:
        return None
    if src in ENTRY_POINTS:
        return f"{src}/ may not include {dst}/" if dst in ENTRY_FORBIDDEN[src] else None
    if dst in ENTRY_POINTS:
        return f"a library ({src}/) may not include the entry point {dst}/"
    if dst == "ops":
        return ("no library includes ops/: it fills the registry's rows; what a library shares "
                "with it belongs in that library or one below it (semantics/ for the registry)")
    if (src, dst) in SIBLINGS:
        return f"{src}/ and {dst}/ are independent layers"
    if src in LIBRARIES and dst in LIBRARIES and LIBRARIES.index(dst) > LIBRARIES.index(src):
        return f"{src}/ is below {dst}/"
    return None


def top_folder(root, path):
    rel = os.path.relpath(path, root)
    return None if rel.startswith("..") else rel.split(os.sep)[0]


def resolve(root, including, target):
    for base in (os.path.dirname(including), root):
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(candidate):
            return candidate
    return None


def sources(root):
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            for name in sorted(filenames):
                if name.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, name)


def violations(root):
    found = []
    for path in sources(root):
        src = top_folder(root, path)
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1))
                dst = target and top_folder(root, target)
                if dst not in FOLDERS:
                    continue
                why = forbidden(src, dst)
                if why:
                    rel = os.path.relpath(path, root)
                    found.append(f"{rel}:{number}: {src} -> {dst} ({m.group(1)}): {why}")
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} forbidden include edge(s); the rules are at the top of "
              f"tests/layering.py")
        return 1
    print("layering: no forbidden include edge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
