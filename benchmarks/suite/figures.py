"""Figures: one measured quantity with its unit, median, min and max over the rounds, and, where
the project states one, its target and the verdict against it.

A figure is a plain dict (it goes into report.json as it is):
    {"id": "ad/BM_CompileMlp100/time", "group": "ad", "unit": "ms", "better": "lower",
     "kind": "measure", "median": 12.3, "min": 11.9, "max": 13.0, "n": 3,
     "samples": [...], "note": "...",
     "target": {"op": "<=", "value": 2000, "source": "bench_autodiff.cpp header"},
     "verdict": "pass"}
kind: "measure" (a time, a rate, a memory), "vs_peer" (ours / the peer), "vs_limit" (ours / a
machine limit measured in the same run), "vs_published" (ours / a published figure).
"""
import statistics

KINDS = ("measure", "vs_peer", "vs_limit", "vs_published")
# "within": a ratio within value of 1 (|median - 1| <= value), e.g. ours / published within 10%.
OPS = {"<=": lambda v, t: v <= t, ">=": lambda v, t: v >= t, "within": lambda v, t: abs(v - 1) <= t}


def target(op, value, source):
    if op not in OPS:
        raise ValueError(f"target op {op!r} is not one of {sorted(OPS)}")
    return {"op": op, "value": value, "source": source}


def figure(fid, unit, samples, better="lower", kind="measure", note=None, tgt=None):
    """A figure from its samples (one per round); median, min and max over them."""
    samples = [float(s) for s in samples]
    if not samples:
        raise ValueError(f"figure {fid}: no samples")
    if better not in ("lower", "higher"):
        raise ValueError(f"figure {fid}: better is {better!r}, not lower or higher")
    if kind not in KINDS:
        raise ValueError(f"figure {fid}: kind {kind!r} is not one of {KINDS}")
    f = {"id": fid, "group": fid.split("/")[0], "unit": unit, "better": better, "kind": kind,
         "median": statistics.median(samples), "min": min(samples), "max": max(samples),
         "n": len(samples), "samples": samples}
    if note:
        f["note"] = note
    if tgt:
        f["target"] = tgt
        f["verdict"] = "pass" if OPS[tgt["op"]](f["median"], tgt["value"]) else "miss"
    return f


def paired_ratio(a, b):
    """Per-round ratios a[i] / b[i] of two equally long sample lists (rounds pair up: the same
    machine state); unequal lengths pair every a with the median of b."""
    if len(a) == len(b):
        return [x / y for x, y in zip(a, b) if y]
    m = statistics.median(b)
    return [x / m for x in a] if m else []
