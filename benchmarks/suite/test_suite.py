#!/usr/bin/env python3
"""Unit tests of the suite's driver without running a benchmark (ctest bench_suite_unit):
--compare on synthetic reports (a real regression, a change within noise), the schema checker,
the workload figures from compare.py rows, and the HTML page."""
import copy
import io
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402
import groups  # noqa: E402
import regress  # noqa: E402
import report_html  # noqa: E402
import schema  # noqa: E402
from figures import figure, target  # noqa: E402


def synthetic_report(figs, created="2026-12-01T10:00:00+00:00"):
    return {"schema": bench.SCHEMA_ID, "created": created, "command": "./spora bench --quick",
            "quick": True, "tiny": False, "rounds": 3, "seconds": 12.5,
            "machine": {"host": "h", "cpu": "AMD EPYC", "cpu_flags": ["avx2"],
                        "cores": {"logical_cores": 2}, "memory_bytes": 24 * 2 ** 30,
                        "compiler": {"path": "/usr/bin/c++", "version": "c++ 12.2", "build_type": "RelWithDebInfo"},
                        "libraries": {"libopenblas0": "0.3.21"},
                        "git": {"commit": "0" * 40, "clean": True, "describe": "abc"}},
            "groups": {"ad": {"status": "ran", "seconds": 3.0, "commands": ["bench_autodiff"], "figures": len(figs)},
                       "workloads": {"status": "skipped", "seconds": 0.1, "commands": [],
                                     "note": "PyTorch is not importable"}},
            "figures": figs}


# A: three rounds of each figure.
BASE = [figure("ad/BM_CompileMlp100/time", "ms", [100.0, 102.0, 104.0]),
        figure("ad/BM_CheckpointMemory/0/peak_memory", "MB", [50.0, 50.0, 50.0]),
        figure("frontend/BM_FrontEnd/400/lines_per_second", "lines/s", [20000.0, 21000.0, 22000.0],
               better="higher")]


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def variant(changes):
    """BASE with each named figure's samples replaced."""
    out = []
    for f in BASE:
        s = changes.get(f["id"], f["samples"])
        out.append(figure(f["id"], f["unit"], s, better=f["better"]))
    return out


class CompareTest(unittest.TestCase):
    def test_real_regression(self):
        # CompileMlp100 30% slower, every round of B above every round of A; lines/s 20% lower.
        a = synthetic_report(BASE)
        b = synthetic_report(variant({"ad/BM_CompileMlp100/time": [130.0, 133.0, 135.0],
                                      "frontend/BM_FrontEnd/400/lines_per_second": [16000.0, 16800.0, 17000.0]}))
        rows = {r[0]: r for r in regress.compare(a, b)}
        self.assertEqual(rows["ad/BM_CompileMlp100/time"][4], "regression")
        self.assertAlmostEqual(rows["ad/BM_CompileMlp100/time"][3], 133.0 / 102.0 - 1)
        self.assertEqual(rows["frontend/BM_FrontEnd/400/lines_per_second"][4], "regression")
        self.assertAlmostEqual(rows["frontend/BM_FrontEnd/400/lines_per_second"][3], 0.2)
        self.assertEqual(rows["ad/BM_CheckpointMemory/0/peak_memory"][4], "within noise")
        self.assertEqual(self._exit(a, b), 1)
        # The same change the other way is an improvement, and exits 0.
        self.assertEqual({r[0]: r[4] for r in regress.compare(b, a)}["ad/BM_CompileMlp100/time"], "improvement")
        self.assertEqual(self._exit(b, a), 0)

    def test_within_noise(self):
        # +15% on the median, but A's and B's ranges overlap: another round could reverse it.
        a = synthetic_report(BASE)
        b = synthetic_report(variant({"ad/BM_CompileMlp100/time": [103.0, 117.3, 140.0],
                                      "ad/BM_CheckpointMemory/0/peak_memory": [52.0, 52.0, 52.0]}))
        rows = {r[0]: r for r in regress.compare(a, b)}
        self.assertAlmostEqual(rows["ad/BM_CompileMlp100/time"][3], 0.15)
        self.assertEqual(rows["ad/BM_CompileMlp100/time"][4], "within noise")
        # +4% without overlap is below the 10% threshold.
        self.assertEqual(rows["ad/BM_CheckpointMemory/0/peak_memory"][4], "within noise")
        self.assertEqual(self._exit(a, b), 0)
        # With a 3% threshold the disjoint +4% is a regression.
        rows3 = {r[0]: r for r in regress.compare(a, b, threshold=0.03)}
        self.assertEqual(rows3["ad/BM_CheckpointMemory/0/peak_memory"][4], "regression")

    def test_caveats(self):
        a, b = synthetic_report(BASE), synthetic_report(BASE)
        a["machine"]["load_average_at_start"], b["machine"]["load_average_at_start"] = [0.2, 0, 0], [5.9, 0, 0]
        b["quick"], b["machine"]["cpu"] = False, "Intel Xeon"
        a["groups"]["ad"]["background_cores"], b["groups"]["ad"]["background_cores"] = 0.02, 1.8
        self.assertEqual(regress.caveats(a, b), [
            "different CPUs: AMD EPYC / Intel Xeon",
            "the machines' load differed: 1-minute load average 0.20 at A's start, 5.90 at B's "
            "(other processes change the times)",
            "group ad: other processes used 0.02 cores during A, 1.8 during B",
            "quick: True / False"])
        b["groups"]["ad"]["background_cores"] = 0.1  # both quiet: no caveat
        self.assertNotIn("group ad", " ".join(regress.caveats(a, b)))

    def test_new_and_gone_figures(self):
        a = synthetic_report(BASE)
        b = synthetic_report(BASE[:2] + [figure("sim/x/vs_paper", "x", [1.0], kind="vs_published")])
        verdicts = {r[0]: r[4] for r in regress.compare(a, b)}
        self.assertEqual(verdicts["frontend/BM_FrontEnd/400/lines_per_second"], "only in A")
        self.assertEqual(verdicts["sim/x/vs_paper"], "only in B")

    def _exit(self, a, b):
        with tempfile.TemporaryDirectory() as d:
            pa, pb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            write_json(pa, a)
            write_json(pb, b)
            buf = io.StringIO()
            rc = regress.main(pa, pb, out=buf)
            self.assertIn("summary:", buf.getvalue())
            return rc


class SchemaTest(unittest.TestCase):
    def setUp(self):
        self.schema = schema.load(bench.SCHEMA_PATH)

    def test_valid(self):
        self.assertEqual(schema.validate(synthetic_report(BASE), self.schema), [])

    def test_problems_name_the_path(self):
        r = synthetic_report(copy.deepcopy(BASE))
        del r["figures"][1]["median"]
        r["figures"][2]["unit"] = 3
        r["groups"]["ad"]["status"] = "done"
        del r["machine"]["git"]["clean"]
        r["rounds"] = 0
        self.assertEqual(sorted(schema.validate(r, self.schema)), sorted([
            "$.figures[1]: missing required key 'median'",
            "$.figures[2].unit: expected string, got int",
            "$.groups.ad.status: 'done' is not one of ['ran', 'skipped', 'failed']",
            "$.machine.git: missing required key 'clean'",
            "$.rounds: 0 is below the minimum 1"]))

    def test_unsupported_keyword_is_refused(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"type": "object", "oneOf": []}, f)
        with self.assertRaisesRegex(ValueError, "oneOf"):
            schema.load(f.name)
        os.unlink(f.name)


class FigureTest(unittest.TestCase):
    def test_median_min_max_and_verdicts(self):
        f = figure("ad/x/time", "ms", [3.0, 1.0, 2.0, 10.0], tgt=target("<=", 2.4, "s"))
        self.assertEqual((f["median"], f["min"], f["max"], f["n"]), (2.5, 1.0, 10.0, 4))
        self.assertEqual(f["verdict"], "miss")
        self.assertEqual(figure("sim/a/r", "x", [1.09], tgt=target("within", 0.1, "s"))["verdict"], "pass")
        self.assertEqual(figure("sim/a/r", "x", [0.89], tgt=target("within", 0.1, "s"))["verdict"], "miss")

    def test_workload_figures_from_compare_rows(self):
        def rnd(w2_graph_ratio, w5_fused, w5_unfused):
            rows = [dict(workload="W2", mode="graph", ours_ms=2.0, peer_ms=2.0 / w2_graph_ratio, ratio=w2_graph_ratio),
                    dict(workload="W2", mode="graph vs GEMM bound", ratio=1.25),
                    dict(workload="W5", mode="graph", ours_ms=w5_fused, peer_ms=17.0, ratio=w5_fused / 17.0),
                    dict(workload="W5", mode="graph-nofuse", ours_ms=w5_unfused, peer_ms=17.0, ratio=w5_unfused / 17.0),
                    dict(workload="W6", mode="graph", ours_ms=20.0, peer_ms=30.0, ratio=20.0 / 30.0)]
            peer = {"results": [{"workload": "W6 rnn", "median_ms": 30.0}, {"workload": "W6 rnn", "median_ms": 12.9}]}
            return {"rows": rows, "peer": peer}
        figs = {f["id"]: f for f in groups.workload_figures([rnd(0.7, 2.0, 7.0), rnd(0.9, 2.1, 7.2), rnd(0.75, 2.2, 6.9)])}
        self.assertEqual(figs["workloads/W2/graph/vs_peer"]["median"], 0.75)
        self.assertEqual(figs["workloads/W2/graph/vs_peer"]["verdict"], "pass")  # <= 0.8
        self.assertEqual(figs["workloads/W2/graph/vs_gemm_bound"]["verdict"], "pass")  # <= 1.3
        self.assertAlmostEqual(figs["workloads/W5/graph/vs_peer"]["median"], 2.1 / 17.0)
        self.assertEqual(figs["workloads/W5/graph/vs_peer"]["verdict"], "pass")  # <= 0.2
        self.assertAlmostEqual(figs["workloads/W5/fused_vs_unfused"]["median"], 2.1 / 7.2)
        self.assertAlmostEqual(figs["workloads/W6/graph/vs_peer_fastest"]["median"], 20.0 / 12.9)
        self.assertEqual(figs["workloads/W6/graph/vs_peer_fastest"]["verdict"], "miss")  # <= 1.0


class CompareRoundsTest(unittest.TestCase):
    """benchmarks/compare.py --rounds N: each ratio's median and min-max over the rounds."""

    def test_median_min_max_over_rounds(self):
        sys.path.insert(0, os.path.dirname(HERE))
        import compare  # benchmarks/compare.py
        def rnd(ours, peer, fused, unfused):
            return [dict(workload="W2", mode="graph", ours_ms=ours, peer_ms=peer, ratio=ours / peer,
                         target=0.8),
                    dict(workload="W2", mode="fused / unfused", ours_ms=fused, unfused_ms=unfused,
                         ratio=fused / unfused, target=1.0),
                    dict(workload="W5", mode="fused vs unfused", ours_ms=1.0, unfused_ms=3.2,
                         speedup=3.2, target=3.0)]
        rows = {(r["workload"], r["mode"]): r for r in compare.aggregate(
            [rnd(2.0, 2.4, 2.0, 2.1), rnd(2.2, 2.4, 2.2, 2.0), rnd(1.8, 2.5, 1.8, 1.9)])}
        w2 = rows[("W2", "graph")]
        self.assertEqual(w2["rounds"], 3)
        self.assertEqual((w2["ours_ms"], w2["peer_ms"]), (2.0, 2.4))
        self.assertAlmostEqual(w2["ratio_median"], 2.0 / 2.4)
        self.assertAlmostEqual(w2["ratio_min"], 1.8 / 2.5)
        self.assertAlmostEqual(w2["ratio_max"], 2.2 / 2.4)
        self.assertEqual(w2["result"], "MISS")  # 0.833 > 0.8
        fu = rows[("W2", "fused / unfused")]
        self.assertAlmostEqual(fu["ratio_median"], 2.0 / 2.1)
        self.assertAlmostEqual(fu["ratio_max"], 2.2 / 2.0)
        self.assertEqual(fu["result"], "pass")
        self.assertEqual(rows[("W5", "fused vs unfused")]["result"], "pass")  # speedup 3.2 >= 3
        self.assertIn("0.72-0.92", compare.aggregate_table(list(rows.values())))


class HtmlTest(unittest.TestCase):
    def test_self_contained_with_history(self):
        old = synthetic_report(BASE, created="2026-11-30T10:00:00+00:00")
        new = synthetic_report(variant({"ad/BM_CompileMlp100/time": [130.0, 133.0, 135.0]}) +
                               [figure("sim/m/vs_paper", "x", [1.05], kind="vs_published",
                                       tgt=target("within", 0.1, "paper"))])
        with tempfile.TemporaryDirectory() as d:
            for name, r in (("a", old), ("b", new)):
                os.makedirs(os.path.join(d, name))
                write_json(os.path.join(d, name, "report.json"), r)
            history = report_html.load_history(d, exclude=os.path.join(d, "b", "report.json"))
        self.assertEqual(len(history), 1)
        page = report_html.render(new, history)
        # Nothing is fetched: no src/href attributes, no URL but the SVG namespace.
        self.assertIsNone(re.search(r"\b(src|href)\s*=", page))
        self.assertEqual(set(re.findall(r"https?://[^\s\"'<]+", page)), {"http://www.w3.org/2000/svg"})
        # The history sparkline of CompileMlp100 has two points, the last this run's median.
        self.assertIn("<title>2 report(s): 102, 133</title>", page)
        self.assertIn("1 pass, 0 miss", page)
        self.assertIn("PyTorch is not importable", page)


if __name__ == "__main__":
    unittest.main()
