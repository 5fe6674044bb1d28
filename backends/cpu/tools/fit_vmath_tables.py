#!/usr/bin/env python3
"""Tables of backends/cpu/vmath.h's table forms of tanh and gelu (python3 + mpmath only).

    python3 backends/cpu/tools/fit_vmath_tables.py > /tmp/tables.inc   # ~45 s

prints the `namespace tab` arrays of vmath.h (kTanhM, kTanhC0..5, kGeluM, kGeluC0..5) and, on
stderr, each interval's fit error. Each of the 32 intervals gets p(t) = c0 + t (c1 + ... +
t c5), t = x - m, fitted for the minimax error (relative for tanh, absolute for gelu's Phi):
weighted least squares on Chebyshev points, then Lawson reweighting.

c0 is never fitted: it is an f32 taken exactly, so that it adds no rounding (Gal's accurate
tables): m is a float near the interval's middle (tanh) or start (gelu) whose function value is
within 2^-12 ulp of an f32, c0 that f32. Exceptions: tanh's first interval [0, 1/16) is the odd
polynomial a + c3 a^3 + c5 a^5 (m = 0); tanh's tail [8, 10) takes its m from a target f32 value
(m = atanh(c)); gelu's first interval has m = -5.875 and c0 = 0 (Phi(-5.875) = 0 exactly, for
gelu(-inf) = nan); gelu's intervals from 4 on have m = start - 1 and c0 = 1 (the polynomial is
Phi - 1, so Phi rounds to exactly 1 where it should). Constant intervals: tanh from 10 on (1),
gelu's last (1).

tanh's intervals: [0, 1/16), then 4 per binade up to 8, [8, 10), [10, 12), [12, inf); the slot
of interval k is (491 + k) & 31 (vmath.h takes max(bits(a) >> 21, 491) & 31). gelu's: 32 of
0.375 from -5.875.
"""

import struct
import sys

from mpmath import atanh, cos, erfc, floor, ldexp, log, lu_solve, matrix, mp, mpf, pi, sqrt, tanh

mp.dps = 40
DEG = 5


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def bits(v):
    return struct.unpack("I", struct.pack("f", float(v)))[0]


def from_bits(b):
    return struct.unpack("f", struct.pack("I", b))[0]


def ulps_off(v):
    """How far v is from its nearest f32, in that f32's ulps, and that f32."""
    c = f32(v)
    ulp = ldexp(1, int(floor(log(abs(c), 2))) - 23)
    return abs(v - mpf(c)) / ulp, c


def fit(f, m, c0, powers, tl, th, relative, npts=60, iters=30):
    """c0 + sum c_k t^k (k in powers) ~ f(m + t) on [tl, th]; returns (max error, coefficients)."""
    ts = [tl + (th - tl) * (1 - cos(pi * (i + mpf(0.5)) / npts)) / 2 for i in range(npts)]
    ts += [tl, th]
    rows = [([t**k for k in powers], f(m + t)) for t in ts]
    fixed = [c0 + (t if 1 not in powers and relative else 0) for t in ts]  # tanh's first: c1 = 1
    w = [mpf(1)] * len(ts)
    best = None
    for _ in range(iters):
        a, b = matrix(len(powers), len(powers)), matrix(len(powers), 1)
        for (row, fv), fx, wt in zip(rows, fixed, w):
            s = wt / (fv * fv if relative and fv != 0 else 1)
            for i in range(len(powers)):
                b[i] += s * row[i] * (fv - fx)
                for j in range(len(powers)):
                    a[i, j] += s * row[i] * row[j]
        c = lu_solve(a, b)
        errs = []
        for (row, fv), fx in zip(rows, fixed):
            e = abs(fx + sum(c[i] * row[i] for i in range(len(powers))) - fv)
            errs.append(e / abs(fv) if relative and fv != 0 else e)
        if best is None or max(errs) < best[0]:
            best = (max(errs), [c[i] for i in range(len(powers))])
        total = sum(wi * ei for wi, ei in zip(w, errs))
        w = [wi * ei / total for wi, ei in zip(w, errs)]
    coef = [mpf(0)] * (DEG + 1)
    coef[0] = c0
    for p, v in zip(powers, best[1]):
        coef[p] = v
    return best[0], coef


def near_f32(f, lo, hi, start):
    """A float m in [lo, hi), scanning from `start`, with f(m) within 2^-12 ulp of an f32."""
    b = bits(start)
    best = None
    for k in range(200000):
        for s in (1, -1):
            m = from_bits(b + s * k)
            if not lo <= m < hi:
                continue
            d, c = ulps_off(f(mpf(m)))
            if best is None or d < best[0]:
                best = (d, m, c)
            if d < ldexp(1, -12):
                return m, c
    return best[1], best[2]


def tanh_tables():
    ivs = [(mpf(0), mpf(1) / 16)]
    for e in range(-4, 3):
        for j in range(4):
            lo = ldexp(1 + mpf(j) / 4, e)
            ivs.append((lo, lo + ldexp(mpf(1) / 4, e)))
    ivs.append((mpf(8), mpf(10)))
    rows = []
    for k, (lo, hi) in enumerate(ivs):
        if k == 0:
            m, c0, powers = 0.0, mpf(0), [3, 5]  # a + c3 a^3 + c5 a^5
        elif hi <= 8:
            m, c0 = near_f32(tanh, lo, hi, f32((lo + hi) / 2))
            c0, powers = mpf(c0), list(range(1, DEG + 1))
        else:  # tanh ~ 1: m = atanh(c) for an f32 c whose m is close enough
            for j in range(1, 64):
                m = f32(atanh(1 - ldexp(j, -24)))
                d, c0 = ulps_off(tanh(mpf(m)))
                if lo <= m < hi and d < ldexp(1, -12):
                    break
            c0, powers = mpf(c0), list(range(1, DEG + 1))
        e, c = fit(tanh, mpf(m), c0, powers, lo - m, hi - m, relative=True)
        if k == 0:
            c[1] = mpf(1)
        print(f"tanh {k:2d} [{float(lo):.6g}, {float(hi):.6g}) m={m!r}: {float(e):.3g} relative",
              file=sys.stderr)
        rows.append((m, [f32(x) for x in c]))
    rows.append((0.0, [1.0] + [0.0] * DEG))  # [10, 12)
    rows.append((0.0, [1.0] + [0.0] * DEG))  # [12, inf)
    slots = [None] * 32
    for k in range(32):
        slots[(491 + k) & 31] = rows[k]
    return slots


def gelu_tables():
    def phi(x):
        return erfc(-x / sqrt(2)) / 2

    start, width = mpf(-5.875), mpf(0.375)
    rows = []
    for k in range(32):
        lo = start + k * width
        if k == 31:
            rows.append((float(lo), [1.0] + [0.0] * DEG))
            continue
        if k == 0:
            m, c0 = lo, mpf(0)
        elif lo >= 4:
            m, c0 = lo - 1, mpf(1)
        else:
            m, c0 = near_f32(phi, lo, lo + width / 4, f32(lo))
            m, c0 = mpf(m), mpf(c0)
        d = mpf(0.002)  # the computed interval may be off by a rounding at its ends
        e, c = fit(phi, m, c0, list(range(1, DEG + 1)), lo - m - d, lo + width - m + d, False)
        print(f"gelu {k:2d} m={float(m):+.6f}: {float(e):.3g} absolute", file=sys.stderr)
        rows.append((float(m), [f32(x) for x in c]))
    return rows


def emit(name, vals):
    def lit(v):
        s = "%.9g" % v
        return s + ("f" if "." in s or "e" in s else ".0f")

    print(f"alignas(64) inline constexpr float {name}[32] = {{")
    for i in range(0, 32, 4):
        print("    " + ", ".join(lit(v) for v in vals[i : i + 4]) + ",")
    print("};")


if __name__ == "__main__":
    for prefix, rows in (("kTanh", tanh_tables()), ("kGelu", gelu_tables())):
        emit(prefix + "M", [r[0] for r in rows])
        for p in range(DEG + 1):
            emit(f"{prefix}C{p}", [r[1][p] for r in rows])
