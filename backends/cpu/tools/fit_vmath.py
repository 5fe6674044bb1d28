#!/usr/bin/env python3
"""Fits and checks the coefficients of backends/cpu/vmath.h's gelu (python3 + mpmath only).

    python3 backends/cpu/tools/fit_vmath.py gelu [m n]   # rational erf for gelu, P degree m, Q n

gelu: Phi(x) = (1 + erf(x / sqrt 2)) / 2 = N / D with N = Q(X) + x P(X), D = 2 Q(X), X = x^2,
Q monic. Equivalently erf(y) = y P'(s) / Q'(s) with s = y^2 = X / 2: the fit is made for erf on
y in [0, YMAX] (absolute error, which is what gelu's negative tail needs: Phi(-|x|) = (1 -
erf(|y|)) / 2 is a difference there), then rescaled to x exactly (powers of 2) except for the
factor 1 / sqrt 2 of P, and rounded to f32. Method: linearised least squares (Sanathanan-Koerner
iterations: weights 1 / Q_previous^2), then Lawson reweighting (weights times |error|) toward the
minimax error, on Chebyshev-spaced points. Prints the f32 coefficients (in vmath.h's order,
highest power first), the error in exact arithmetic with the f32 coefficients, and where the
rational overshoots 1 beyond YMAX (gelu's negative clamp must sit where 1 + erf_R(-y) < 0
with a margin, see vmath.h).
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


def gelu(m=6, n=5, xmax=4 * sqrt(2)):
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
    print(f"P degree {m}, Q degree {n} (monic), x in [0, {mp.nstr(xmax, 6)}]: exact fit {mp.nstr(emax, 3)}", flush=True)
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
    print(f"with the f32 coefficients: max |erf_R - erf| on [0, {mp.nstr(xmax, 6)}] = {mp.nstr(worst, 3)}")
    for x in [5.0, 5.5, 5.625, 5.75, 6.0, 6.25, 6.375, 6.5, 7.0]:
        x = mpf(x)
        print(f"  x {mp.nstr(x, 5)}: erf_R - 1 = {mp.nstr(erf_r(x) - 1, 3)}")
    return Pf, Qf


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "gelu"
    if what == "gelu":
        m = int(sys.argv[2]) if len(sys.argv) > 2 else 6
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
        gelu(m, n)
    else:
        sys.exit(f"unknown fit {what!r}: expected gelu")
