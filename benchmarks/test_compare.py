#!/usr/bin/env python3
"""Unit tests of compare.py's report on synthetic results (no benchmark runs): the ratios to
the peer, the GEMM workloads against the SGEMM rate, and the aggregation over rounds."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def ours(rows):
    """Google Benchmark JSON of bench_workloads: {name: counters}."""
    return {"benchmarks": [dict(name=name, **counters) for name, counters in rows.items()]}


def peer(rows):
    """The peer script's JSON: {(workload id, mode, config): median ms}."""
    names = {"W1": "W1 MLP 784-512-512-10 forward B64", "W4": "W4 Transformer encoder block fwd+bwd"}
    return {"results": [dict(workload=names[w], mode=mode, config=config, median_ms=ms, min_ms=ms,
                             bg_load=0.0) for (w, mode, config), ms in rows.items()]}


def run(median_ms, threads=2, cpu_ms=None, bg=0.0):
    return dict(median_ms=median_ms, min_ms=median_ms, bg_load=bg, cpu_ms=cpu_ms or median_ms,
                threads=threads)


class Report(unittest.TestCase):
    def setUp(self):
        # SGEMM at 200 GFLOP/s best: W1's 85.6 MFLOP take 0.428 ms, W4's 5234 MFLOP 26.17 ms.
        self.ours = ours({
            "W1/graph/min_time:2.000/manual_time": run(0.5),
            "W1/eager/iterations:5/manual_time": run(0.6),
            "W4/graph/min_time:2.000/manual_time": run(30.0),
            "Limit/Sgemm1024/iterations:40/manual_time": dict(run(11.0), gflops_best=150.0),
            "Limit/Sgemm1024OneDNN/iterations:40/manual_time": dict(run(10.0), gflops_best=200.0),
        })
        self.peer = peer({("W1", "eager", "default"): 0.8, ("W1", "eager", "omp-passive"): 0.64,
                          ("W1", "jit.trace", "default"): 0.55, ("W4", "eager", "default"): 40.0})

    def test_ratios_against_the_fastest_eager_peer(self):
        _, summary = compare.print_report(self.ours, self.peer)
        rows = {(r["workload"], r["mode"]): r for r in summary}
        # The peer is its fastest eager configuration (0.64 ms), not the faster jit.trace.
        self.assertAlmostEqual(rows[("W1", "graph")]["ratio"], 0.5 / 0.64)
        self.assertEqual(rows[("W1", "graph")]["result"], "pass")
        self.assertAlmostEqual(rows[("W1", "eager")]["ratio"], 0.6 / 0.64)
        self.assertAlmostEqual(rows[("W4", "graph")]["ratio"], 30.0 / 40.0)

    def test_fused_over_unfused_comes_from_fuse_ratio_where_it_ran(self):
        # W1: fuse-ratio (the two modules in turns) wins over the quotient of graph and
        # graph-nofuse, timed one after the other; W4 has only the quotient.
        o = ours({
            "W1/graph/min_time:2.000/manual_time": run(0.5),
            "W1/graph-nofuse/min_time:1.000/manual_time": run(0.4),
            "W1/fuse-ratio/min_time:2.000/manual_time": dict(run(1.0), fused_ms=0.49,
                                                             unfused_ms=0.5, ratio=0.98),
            "W4/graph/min_time:2.000/manual_time": run(30.0),
            "W4/graph-nofuse/min_time:1.000/manual_time": run(25.0),
        })
        _, summary = compare.print_report(o, self.peer)
        rows = {(r["workload"], r["mode"]): r for r in summary}
        w1, w4 = rows[("W1", "fused / unfused")], rows[("W4", "fused / unfused")]
        self.assertAlmostEqual(w1["ratio"], 0.98)
        self.assertTrue(w1["interleaved"])
        self.assertEqual(w1["result"], "pass")
        self.assertAlmostEqual(w4["ratio"], 30.0 / 25.0)
        self.assertFalse(w4["interleaved"])
        self.assertEqual(w4["result"], "MISS")

    def test_gemm_workloads_against_the_faster_librarys_sgemm_rate(self):
        text, summary = compare.print_report(self.ours, self.peer)
        rows = {(r["workload"], r["mode"]): r for r in summary}
        w1_bound = 2 * 64 * (784 * 512 + 512 * 512 + 512 * 10) / 200e9 * 1e3
        self.assertAlmostEqual(rows[("W1", "graph vs SGEMM rate")]["bound_ms"], w1_bound)
        self.assertAlmostEqual(rows[("W1", "graph vs SGEMM rate")]["ratio"], 0.5 / w1_bound)
        self.assertAlmostEqual(rows[("W1", "peer vs SGEMM rate")]["ratio"], 0.64 / w1_bound)
        w4_bound = 5234.491392e6 / 200e9 * 1e3
        self.assertAlmostEqual(rows[("W4", "graph vs SGEMM rate")]["bound_ms"], w4_bound)
        self.assertAlmostEqual(rows[("W4", "peer vs SGEMM rate")]["ratio"], 40.0 / w4_bound)
        # The line names what the graph target asks of the machine: 0.8 x the peer's ratio.
        self.assertIn(f"graph target 0.8 x the peer = {0.8 * 40.0 / w4_bound:.2f}x", text)
        self.assertNotIn(("W2", "graph vs SGEMM rate"), rows)  # W2 did not run

    def test_rounds_aggregate_to_the_median_ratio_and_its_range(self):
        rounds = []
        for w4_ms in (30.0, 34.0, 26.0):
            o = ours({"W4/graph/min_time:2.000/manual_time": run(w4_ms)})
            rounds.append(compare.print_report(o, peer({("W4", "eager", "default"): 40.0}))[1])
        (row,) = [r for r in compare.aggregate(rounds) if r["mode"] == "graph"]
        self.assertAlmostEqual(row["ratio_median"], 0.75)
        self.assertAlmostEqual(row["ratio_min"], 0.65)
        self.assertAlmostEqual(row["ratio_max"], 0.85)
        self.assertEqual(row["result"], "pass")  # 0.75 <= 0.8


if __name__ == "__main__":
    unittest.main()
