#!/usr/bin/env python3
"""Coefficients of backends/cpu/vmath.h's gelu: derivation and refits (python3 + mpmath only).

    python3 backends/cpu/tools/fit_vmath.py gelu        # vmath.h's gelu coefficients, derived
    python3 backends/cpu/tools/fit_vmath.py fit M N     # a fresh fit, P degree M, Q degree N

gelu computes Phi(x) = (1 + erf(x / sqrt 2)) / 2 = N / D with N = Q(X) + x P(X), D = 2 Q(X),
X = x^2, Q monic. `gelu` derives P and Q from erf_rational's f32 coefficients (erf(y) = y p(s) /
q(s), s = y^2, constant term of q 1): the coefficient of s^k becomes that of X^k times 2^-k
(s = X / 2, exact), P takes 1 / sqrt 2, both are divided by Q's leading coefficient and rounded
to f32. It prints them in vmath.h's order (highest power first), the error of the rational in
exact arithmetic, and erf_R - 1 around the clamps: gelu clamps x at 5.625 (erf_R - 1 small
enough that N / D rounds to 1) and at -6.375, where the rational overshoots (erf_R - 1 = +4e-7
at 6.375, so N < 0 there by a margin of several roundings).

`fit` makes a new weighted minimax fit of erf(x / sqrt 2) ~ x P(X) / Q(X) on [0, 4 sqrt 2] for
the absolute error (what gelu's negative tail needs: Phi(-|x|) is a difference there):
linearised least squares with Sanathanan-Koerner iterations (weights 1 / Q_previous^2), then
Lawson reweighting toward the minimax error, on Chebyshev-spaced points; the coefficients are
rounded to f32 one at a time (highest powers first), the others refitted each time. Tried
2026-11-30 and not used (gelu's worst fraction of the backend tolerance with FMA contraction /
without, over the dense sweep of tests/cpu/vmath_test.cpp; the derived coefficients give
0.80 / 0.84): degrees (6, 5) refitted 0.78 / 0.97, (6, 4) 0.83 / 0.98, (5, 5) 0.80 / 1.03. The
tail's error is the f32 rounding of N's cancellation, not the fit (1.5e-9 in exact arithmetic
for (6, 5), 5e-8 for (6, 4)), and it depends on how the coefficients round: one degree fewer
saves one FMA, but the portable build's kernels would exceed the tolerance.
"""

import struct
import sys

from mpmath import mp, mpf, erf, sqrt, cos, pi, matrix, lu_solve

mp.dps = 40


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def horner(c, t):  # c highest power first
    r = mpf(0)
    for k in c:
        r = r * t + k
    return r


def fit_erf_x(m, n, xmax, fixed, npts=240, sk_iters=5, lawson_iters=25):
    """erf(x / sqrt 2) ~ x P(X) / Q(X), X = x^2, Q monic of degree n, P of degree m, on [0, xmax],
    minimax absolute error. fixed: {("p"|"q", power): value} coefficients held at given values.
    Returns (max error, P, Q), highest power first."""
    xs = [xmax * (1 - cos(pi * (i + mpf(0.5)) / npts)) / 2 for i in range(npts)]
    fs = [erf(x / sqrt(2)) for x in xs]
    free = [("p", k) for k in range(m + 1) if ("p", k) not in fixed]
    free += [("q", k) for k in range(n) if ("q", k) not in fixed]
    w = [mpf(1)] * npts
    qprev = [mpf(1)] * npts
    best = None
    for it in range(sk_iters + lawson_iters):
        nu = len(free)
        A = matrix(nu, nu)
        b = matrix(nu, 1)
        for x, f, wi, qp in zip(xs, fs, w, qprev):
            X = x * x
            # residual x P(X) - f Q(X) = sum_free row * c - rhs
            row = [x * X**k if kind == "p" else -f * X**k for kind, k in free]
            rhs = f * X**n
            for (kind, k), v in fixed.items():
                rhs -= (x * X**k if kind == "p" else -f * X**k) * v
            ww = wi / qp**2
            for i in range(nu):
                b[i] += ww * row[i] * rhs
                for j in range(nu):
                    A[i, j] += ww * row[i] * row[j]
        sol = lu_solve(A, b)
        coef = dict(fixed)
        for (kind, k), v in zip(free, sol):
            coef[(kind, k)] = v
        P = [coef[("p", k)] for k in range(m, -1, -1)]
        Q = [mpf(1)] + [coef[("q", k)] for k in range(n - 1, -1, -1)]
        errs = [x * horner(P, x * x) / horner(Q, x * x) - f for x, f in zip(xs, fs)]
        emax = max(abs(e) for e in errs)
        if best is None or emax < best[0]:
            best = (emax, P, Q)
        if it < sk_iters:
            qprev = [horner(Q, x * x) for x in xs]
        else:
            w = [wi * (abs(e) / emax + mpf(1e-3)) for wi, e in zip(w, errs)]
            tot = sum(w)
            w = [wi * npts / tot for wi in w]
    return best


def fit(m=6, n=5, xmax=4 * sqrt(2)):
    """The rational fitted with all coefficients free, then rounded to f32 one at a time (highest
    powers first), the others refitted each time, so the f32 rounding costs little."""
    fixed = {}
    order = []
    for k in range(max(m, n), -1, -1):
        if k <= m:
            order.append(("p", k))
        if k < n:
            order.append(("q", k))
    emax, P, Q = fit_erf_x(m, n, xmax, fixed)
    print(f"P degree {m}, Q degree {n} (monic), x in [0, {mp.nstr(xmax, 6)}]: "
          f"exact fit {mp.nstr(emax, 3)}", flush=True)
    for key in order:
        kind, k = key
        val = P[m - k] if kind == "p" else Q[n - k]
        fixed[key] = mpf(f32(val))
        if len(fixed) < len(order):
            emax, P, Q = fit_erf_x(m, n, xmax, fixed, sk_iters=2, lawson_iters=12)
    Pf = [fixed[("p", k)] for k in range(m, -1, -1)]
    Qf = [mpf(1)] + [fixed[("q", k)] for k in range(n - 1, -1, -1)]
    print("P (highest first):", ", ".join(f"{float(c):.10e}f" for c in Pf))
    print("Q (monic, highest first):", ", ".join(f"{float(c):.10e}f" for c in Qf[1:]))

    def erf_r(x):
        return x * horner(Pf, x * x) / horner(Qf, x * x)

    worst = max(abs(erf_r(xmax * i / 4000) - erf(xmax * i / 4000 / sqrt(2))) for i in range(4001))
    print(f"with the f32 coefficients: max |erf_R - erf| on [0, {mp.nstr(xmax, 6)}] = "
          f"{mp.nstr(worst, 3)}")
    for x in [5.0, 5.5, 5.625, 5.75, 6.0, 6.25, 6.375, 6.5, 7.0]:
        x = mpf(x)
        print(f"  x {mp.nstr(x, 5)}: erf_R - 1 = {mp.nstr(erf_r(x) - 1, 3)}")
    return Pf, Qf


# erf_rational_core's coefficients (vmath.h), highest power of s = y^2 first.
ERF_P = [-1.3202009264e-08, 4.6847317208e-06, 3.7960740156e-04, 3.8496172056e-03,
         5.4316908121e-02, 1.8520347774e-01, 1.1283792257e+00]
ERF_Q = [6.3110150222e-05, 1.3075690949e-03, 1.5462095849e-02, 1.1395848542e-01,
         4.9746572971e-01, 1.0]


def gelu():
    p = [mpf(f32(c)) for c in ERF_P]
    q = [mpf(f32(c)) for c in ERF_Q]
    m, n = len(p) - 1, len(q) - 1
    # erf(y) = y p(y^2) / q(y^2); with y = x / sqrt 2, y^2 = X / 2.
    P = [p[i] * mpf(2) ** -(m - i) / sqrt(2) for i in range(m + 1)]
    Q = [q[i] * mpf(2) ** -(n - i) for i in range(n + 1)]
    P = [mpf(f32(c / Q[0])) for c in P]
    Q = [mpf(1)] + [mpf(f32(c / Q[0])) for c in Q[1:]]
    print("P (highest first):", ", ".join(f"{float(c):.10e}f" for c in P))
    print("Q (monic, highest first):", ", ".join(f"{float(c):.10e}f" for c in Q[1:]))

    def erf_r(x):
        return x * horner(P, x * x) / horner(Q, x * x)

    xmax = 4 * sqrt(2)
    worst = max(abs(erf_r(xmax * i / 4000) - erf(xmax * i / 4000 / sqrt(2))) for i in range(4001))
    print(f"max |erf_R - erf| on [0, 4 sqrt 2], exact arithmetic: {mp.nstr(worst, 3)}")
    for x in [5.0, 5.5, 5.625, 5.75, 6.0, 6.25, 6.375, 6.5]:
        x = mpf(x)
        print(f"  x {mp.nstr(x, 5)}: erf_R - 1 = {mp.nstr(erf_r(x) - 1, 3)}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "gelu"
    if what == "gelu":
        gelu()
    elif what == "fit":
        m = int(sys.argv[2]) if len(sys.argv) > 2 else 6
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
        fit(m, n)
    else:
        sys.exit(f"unknown command {what!r}: expected gelu or fit")
