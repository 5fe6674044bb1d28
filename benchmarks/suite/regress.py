"""`./spora bench --compare A/report.json B/report.json`: each figure's change from A to B with
a noise-aware verdict, in the manner of `asv compare` (a change counts only when it is larger
than a factor *and* the measurements' spread does not explain it).

For a figure in both reports, change = B.median / A.median - 1, signed so that a positive
number is worse (slower, less bandwidth), following the figure's `better`. The verdict:
  - "regression" / "improvement": |change| > threshold (default 10%, asv's default factor 1.1)
    and the [min, max] ranges of A's and B's rounds do not overlap;
  - "within noise": otherwise (the change is smaller than the threshold, or the two ranges
    overlap, so another round could reverse it).
Figures in one report only are listed as "only in A" / "only in B". The exit status is 1 when
any figure regressed, so a script can gate on it.
"""
import json
import sys

THRESHOLD = 0.10


def verdict(a, b, threshold=THRESHOLD):
    """(worse-signed relative change, verdict) of figure b against figure a."""
    if a["median"] == 0:
        return 0.0 if b["median"] == 0 else float("inf"), (
            "within noise" if b["median"] == 0 else "changed from 0")
    change = b["median"] / a["median"] - 1
    worse = change if a["better"] == "lower" else -change
    overlap = b["min"] <= a["max"] and a["min"] <= b["max"]
    if abs(change) <= threshold or overlap:
        return worse, "within noise"
    return worse, "regression" if worse > 0 else "improvement"


def compare(ra, rb, threshold=THRESHOLD):
    """Rows (id, a figure or None, b figure or None, worse-signed change or None, verdict)."""
    fa = {f["id"]: f for f in ra["figures"]}
    fb = {f["id"]: f for f in rb["figures"]}
    rows = []
    for fid in sorted(set(fa) | set(fb)):
        a, b = fa.get(fid), fb.get(fid)
        if a is None or b is None:
            rows.append((fid, a, b, None, "only in A" if b is None else "only in B"))
        else:
            change, v = verdict(a, b, threshold)
            rows.append((fid, a, b, change, v))
    order = {"regression": 0, "improvement": 1, "changed from 0": 2, "within noise": 3,
             "only in A": 4, "only in B": 5}
    rows.sort(key=lambda r: (order[r[4]], r[0]))
    return rows


def caveats(ra, rb):
    """Differences between the two runs that make their figures less comparable."""
    out = []
    ma, mb = ra["machine"], rb["machine"]
    if ma.get("cpu") != mb.get("cpu"):
        out.append(f"different CPUs: {ma.get('cpu')} / {mb.get('cpu')}")
    if ma.get("cores") != mb.get("cores"):
        out.append(f"different core counts: {ma.get('cores')} / {mb.get('cores')}")
    la, lb = ma.get("load_average_at_start"), mb.get("load_average_at_start")
    if la and lb and abs(la[0] - lb[0]) > 0.5:
        out.append(f"the machines' load differed: 1-minute load average {la[0]:.2f} at A's start, "
                   f"{lb[0]:.2f} at B's (other processes change the times)")
    for name in sorted(set(ra.get("groups", {})) & set(rb.get("groups", {}))):
        ba = ra["groups"][name].get("background_cores")
        bb = rb["groups"][name].get("background_cores")
        if ba is not None and bb is not None and max(ba, bb) > 0.15:
            out.append(f"group {name}: other processes used {ba} cores during A, {bb} during B")
    for key in ("quick", "tiny", "rounds"):
        if ra.get(key) != rb.get(key):
            out.append(f"{key}: {ra.get(key)} / {rb.get(key)}")
    return out


def _fmt(f):
    return "-" if f is None else f"{f['median']:.4g} [{f['min']:.4g}-{f['max']:.4g}] {f['unit']}"


def main(path_a, path_b, threshold=THRESHOLD, out=sys.stdout):
    with open(path_a) as f:
        ra = json.load(f)
    with open(path_b) as f:
        rb = json.load(f)
    rows = compare(ra, rb, threshold)
    print(f"A: {path_a} ({ra['created']}, {ra['machine'].get('git', {}).get('describe')})", file=out)
    print(f"B: {path_b} ({rb['created']}, {rb['machine'].get('git', {}).get('describe')})", file=out)
    for c in caveats(ra, rb):
        print(f"caveat: {c}", file=out)
    print(f"threshold {threshold:.0%}; change > 0 is worse (slower, less bandwidth); "
          "median [min-max] over each run's rounds", file=out)
    width = max([len(r[0]) for r in rows] + [6])
    print(f"{'figure':<{width}}  {'A':>30}  {'B':>30}  {'change':>8}  verdict", file=out)
    for fid, a, b, change, v in rows:
        ch = "" if change is None else f"{change:+.1%}"
        print(f"{fid:<{width}}  {_fmt(a):>30}  {_fmt(b):>30}  {ch:>8}  {v}", file=out)
    counts = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    print("summary: " + ", ".join(f"{n} {v}" for v, n in counts.items()), file=out)
    return 1 if counts.get("regression") else 0
