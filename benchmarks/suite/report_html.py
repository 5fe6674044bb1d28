"""report.html: one self-contained page (inline CSS and SVG, no network, no external script)
with the run's machine, the groups, the targets with pass / miss, the ratios against the peer,
the machine's limits and published figures as bar charts, and every figure in a table with its
history over the earlier reports in the same parent folder."""
import glob
import html
import json
import os

CSS = """
body{font-family:sans-serif;font-size:14px;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:middle}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#17702f;font-weight:bold}.miss{color:#b3261e;font-weight:bold}
.skipped{color:#8a6d00}.failed{color:#b3261e}.small{color:#666;font-size:12px}
code{background:#f5f5f5;padding:1px 3px}
"""
ESC = html.escape


def load_history(parent, exclude=None):
    """[(created, {figure id: figure})] of the report.json files in parent's subfolders, oldest
    first (a file that does not parse is left out)."""
    out = []
    for path in glob.glob(os.path.join(parent, "*", "report.json")):
        if exclude and os.path.abspath(path) == os.path.abspath(exclude):
            continue
        try:
            with open(path) as f:
                r = json.load(f)
            out.append((r["created"], {f["id"]: f for f in r["figures"]}))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    out.sort(key=lambda e: e[0])
    return out


def num(v):
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.3e}"
    return f"{v:.4g}"


def sparkline(points, width=160, height=28):
    """Medians (dots, joined) with min-max bars, oldest left; the last point is this run."""
    if not points:
        return ""
    lo = min(p[1] for p in points)
    hi = max(p[2] for p in points)
    span = (hi - lo) or (abs(hi) or 1.0)
    n = len(points)
    X = lambda i: 6 + (width - 12) * (i / (n - 1) if n > 1 else 0.5)
    Y = lambda v: height - 4 - (height - 8) * (v - lo) / span
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img"><title>{n} report(s): {ESC(", ".join(num(p[0]) for p in points))}</title>']
    for i, (med, mn, mx) in enumerate(points):
        parts.append(f'<line x1="{X(i):.1f}" y1="{Y(mn):.1f}" x2="{X(i):.1f}" y2="{Y(mx):.1f}" '
                     'stroke="#aac" stroke-width="3"/>')
    if n > 1:
        pts = " ".join(f"{X(i):.1f},{Y(p[0]):.1f}" for i, p in enumerate(points))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="#2a6fb0" stroke-width="1.2"/>')
    for i, (med, _, _) in enumerate(points):
        color = "#d35400" if i == n - 1 else "#2a6fb0"
        parts.append(f'<circle cx="{X(i):.1f}" cy="{Y(med):.1f}" r="2.5" fill="{color}"/>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(figs, title):
    """Horizontal bars of ratio figures (median, min-max whisker), a line at 1 and each target."""
    row_h, left, width = 22, 330, 420
    vmax = max([f["max"] for f in figs] + [f["target"]["value"] for f in figs
                                           if "target" in f and f["target"]["op"] != "within"] + [1.0])
    vmax *= 1.1
    X = lambda v: left + width * max(v, 0) / vmax
    h = 30 + row_h * len(figs) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{h}" '
             f'font-family="sans-serif" font-size="11" role="img"><title>{ESC(title)}</title>',
             f'<text x="{left}" y="16" font-size="12">{ESC(title)}</text>']
    for i, f in enumerate(figs):
        y = 28 + row_h * i
        color = {"pass": "#4c9a5f", "miss": "#c0504d"}.get(f.get("verdict"), "#7f9cc0")
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{ESC(f["id"])}</text>')
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{X(f["median"]) - left:.1f}" height="{row_h - 8}" '
                     f'fill="{color}"><title>{ESC(f["id"])}: {num(f["median"])} (min {num(f["min"])}, '
                     f'max {num(f["max"])})</title></rect>')
        parts.append(f'<line x1="{X(f["min"]):.1f}" y1="{y + row_h / 2}" x2="{X(f["max"]):.1f}" '
                     f'y2="{y + row_h / 2}" stroke="#222"/>')
        parts.append(f'<text x="{X(f["max"]) + 4:.1f}" y="{y + 13}">{num(f["median"])}</text>')
        t = f.get("target")
        if t and t["op"] != "within":
            parts.append(f'<line x1="{X(t["value"]):.1f}" y1="{y + 1}" x2="{X(t["value"]):.1f}" '
                         f'y2="{y + row_h - 3}" stroke="#b3261e" stroke-width="2"/>')
        elif t:
            lo, hi = X(1 - t["value"]), X(1 + t["value"])
            parts.append(f'<rect x="{lo:.1f}" y="{y + 1}" width="{hi - lo:.1f}" height="{row_h - 4}" '
                         'fill="none" stroke="#b3261e" stroke-dasharray="3,2"/>')
    y_end = 28 + row_h * len(figs)
    parts.append(f'<line x1="{X(1):.1f}" y1="24" x2="{X(1):.1f}" y2="{y_end}" stroke="#555" '
                 'stroke-dasharray="4,3"/>')
    parts.append(f'<text x="{X(1):.1f}" y="{y_end + 14}" text-anchor="middle">1</text>')
    parts.append(f'<text x="{left + width}" y="{y_end + 14}" text-anchor="end" class="small">'
                 'red tick / dashed box: target</text></svg>')
    return "".join(parts)


def _target_text(t):
    if t["op"] == "within":
        return f"within {t['value']:.0%} of 1"
    return f"{t['op']} {num(t['value'])}"


def render(report, history):
    m = report["machine"]
    figs = report["figures"]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>spora bench {ESC(report['created'])}</title><style>{CSS}</style></head>",
           '<body data-rendered="0">', f"<h1>spora bench: {ESC(report['created'])}</h1>"]
    git = m.get("git", {})
    mem = m.get("memory_bytes")
    cores = m.get("cores", {})
    out.append("<table>")
    for k, v in [("command", f"<code>{ESC(report['command'])}</code>"),
                 ("rounds", f"{report['rounds']}{' (quick)' if report['quick'] else ''}"
                            f"{' (tiny sizes)' if report['tiny'] else ''}; every figure is the median "
                            "of its rounds, with their min and max"),
                 ("CPU", ESC(str(m.get("cpu")))),
                 ("cores", ESC(", ".join(f"{k}: {v}" for k, v in cores.items() if v is not None))),
                 ("memory", f"{mem / 2 ** 30:.1f} GiB" if mem else "?"),
                 ("compiler", ESC(f"{m['compiler'].get('version')} ({m['compiler'].get('build_type')})")),
                 ("git", ESC(f"{git.get('commit')} ({'clean' if git.get('clean') else 'uncommitted changes'})")),
                 ("host / OS", ESC(f"{m.get('host')}, {m.get('os')}, Linux {m.get('kernel')}")),
                 ("load average at start", ESC(str(m.get("load_average_at_start")))),
                 ("libraries", ESC(", ".join(f"{k} {v}" for k, v in m.get("libraries", {}).items()))),
                 ("CPU flags", f'<span class="small">{ESC(" ".join(m.get("cpu_flags", [])))}</span>'),
                 ("total time", f"{report['seconds']} s")]:
        out.append(f"<tr><th>{k}</th><td>{v}</td></tr>")
    out.append("</table>")

    out.append("<h2>Groups</h2><p class=\"small\">others' cores: CPU other processes used while the "
               "group ran (above ~0.15 the times are contaminated)</p><table><tr><th>group</th>"
               "<th>status</th><th>seconds</th><th>others' cores</th><th>figures</th><th>note</th>"
               "<th>commands</th></tr>")
    for name, g in report["groups"].items():
        cmds = "<br>".join(f"<code>{ESC(c)}</code>" for c in g["commands"])
        out.append(f"<tr><td>{ESC(name)}</td><td class=\"{g['status']}\">{g['status']}</td>"
                   f"<td class=\"num\">{g['seconds']}</td><td class=\"num\">{g.get('background_cores', '?')}</td>"
                   f"<td class=\"num\">{g.get('figures', 0)}</td>"
                   f"<td>{ESC(g.get('note', ''))}</td><td class=\"small\">{cmds}</td></tr>")
    out.append("</table>")

    targeted = [f for f in figs if "target" in f]
    out.append(f"<h2>Targets ({sum(f['verdict'] == 'pass' for f in targeted)} pass, "
               f"{sum(f['verdict'] == 'miss' for f in targeted)} miss)</h2>")
    if targeted:
        out.append("<table><tr><th>figure</th><th>median</th><th>min-max</th><th>target</th>"
                   "<th>verdict</th><th>source</th></tr>")
        for f in targeted:
            out.append(f"<tr><td>{ESC(f['id'])}</td><td class=\"num\">{num(f['median'])} {ESC(f['unit'])}</td>"
                       f"<td class=\"num\">{num(f['min'])}-{num(f['max'])}</td>"
                       f"<td>{ESC(_target_text(f['target']))}</td>"
                       f"<td class=\"{f['verdict']}\">{'pass' if f['verdict'] == 'pass' else 'MISS'}</td>"
                       f"<td class=\"small\">{ESC(f['target']['source'])}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>No figure of this run has a stated target.</p>")

    for kind, title in [("vs_peer", "Against the peer (PyTorch, Open MPI)"),
                        ("vs_limit", "Against the machine's limits"),
                        ("vs_published", "Against published figures")]:
        sel = [f for f in figs if f["kind"] == kind]
        out.append(f"<h2>{title}</h2>")
        if sel:
            out.append(bar_chart(sel, title + ": ratio, median of the rounds, min-max whisker"))
        else:
            out.append("<p>None in this run (see the groups above).</p>")

    out.append(f"<h2>Every figure</h2><p class=\"small\">History: this run (orange) after "
               f"{len(history)} earlier report(s) in the same folder, oldest left; bars are each "
               "run's min-max.</p>")
    for group in report["groups"]:
        sel = [f for f in figs if f["group"] == group]
        if not sel:
            continue
        out.append(f"<h3>{ESC(group)}</h3><table><tr><th>figure</th><th>median</th><th>min</th>"
                   "<th>max</th><th>n</th><th>unit</th><th>better</th><th>history</th><th>note</th></tr>")
        for f in sel:
            points = [(h[f["id"]]["median"], h[f["id"]]["min"], h[f["id"]]["max"])
                      for _, h in history if f["id"] in h and h[f["id"]]["unit"] == f["unit"]]
            points.append((f["median"], f["min"], f["max"]))
            out.append(f"<tr><td>{ESC(f['id'])}</td><td class=\"num\">{num(f['median'])}</td>"
                       f"<td class=\"num\">{num(f['min'])}</td><td class=\"num\">{num(f['max'])}</td>"
                       f"<td class=\"num\">{f['n']}</td><td>{ESC(f['unit'])}</td><td>{f['better']}</td>"
                       f"<td>{sparkline(points)}</td><td class=\"small\">{ESC(f.get('note', ''))}</td></tr>")
        out.append("</table>")
    # The page's only script: marks the page as rendered (tests/bench_suite checks it in Chromium).
    out.append("<script>document.body.dataset.rendered = String(document.querySelectorAll('svg').length + 1);</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
