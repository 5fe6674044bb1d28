#!/usr/bin/env python3
"""Expected values of c18_run_time_functions.sp: sympy's symbolic derivatives along the branches
the inputs take (each run-time condition is decided on the exact value, then the chosen path
is differentiated). Prints the numbers in the order the program prints them (the
"c18_run_time_functions" entry of expected.json).

    python3 tests/conformance/c18_run_time_functions.py
"""
import json

import sympy as sp


def pick(c):
    return (lambda x: x * c) if c > 0 else (lambda x: x * x)


out = []
a, b, two = sp.Rational(3, 2), sp.Rational(-1, 2), sp.Integer(2)
out += [pick(a)(two), pick(b)(two)]
t = sp.Symbol("t")


def grad_at(expr_of, at, sym=t):
    # expr_of(value, symbol): the expression along the branch the value takes
    return sp.diff(expr_of(at, sym), sym).subs(sym, at)


# grad(fn (c) => pick(c)(c * 3.0)) at a and b: the branch is fixed by the value of c
out += [grad_at(lambda v, s: (s * 3 * s) if v > 0 else (s * 3) ** 2, a),
        grad_at(lambda v, s: (s * 3 * s) if v > 0 else (s * 3) ** 2, b)]
out += [pick(a)(two) + pick(b)(sp.Integer(3))]
# scale_or_shift
c = [sp.Integer(1), sp.Integer(2)]
x = [sp.Rational(1, 2), sp.Rational(1, 4)]
for k in [sp.Integer(2), sp.Rational(1, 2)]:
    if k > 1:
        val = [x[i] * c[i] * k for i in range(2)]
        g = [x[i] * k * x[i] for i in range(2)]  # d/dc_i sum(x*c*k*x)
    else:
        val = [x[i] + c[i] for i in range(2)]
        g = [x[i] for i in range(2)]  # d/dc_i sum((x + c) * x)
    out += val + g


# iterate(c, x, n): the path is fixed by the values, then differentiated symbolically
def iterate(cv, xv, n, cs, xs):
    f = lambda z: z
    y, yv = xs, xv
    fv = lambda z: z
    for _ in range(n):
        y, yv = f(y), fv(yv)
        if yv > sp.Rational(1, 4):
            f, fv = (lambda z: sp.sin(z) * cs), (lambda z: sp.sin(z) * cv)
        else:
            f, fv = (lambda z: z * z + cs), (lambda z: z * z + cv)
    return y


cs, xs = sp.symbols("cs xs")
cv, xv = sp.Rational(3, 4), sp.Rational(1, 2)
it = iterate(cv, xv, 4, cs, xs)
at = {cs: cv, xs: xv}
out += [it.subs(at), sp.diff(it, cs).subs(at), sp.diff(it, xs).subs(at)]



# iterate_while(c, x): the same with a while loop (y < 4) and its own lambdas
def iterate_while(cv, xv, cs, xs):
    f, fv = (lambda z: z), (lambda z: z)
    y, yv = xs, xv
    while yv < 4:
        y, yv = f(y) + sp.Rational(1, 2), fv(yv) + sp.Rational(1, 2)
        if yv < 2:
            f, fv = (lambda z: z * cs + sp.Rational(1, 4)), (lambda z: z * cv + sp.Rational(1, 4))
        else:
            f, fv = (lambda z: z * z), (lambda z: z * z)
    return y


itw = iterate_while(cv, xv, cs, xs)
out += [itw.subs(at), sp.diff(itw, cs).subs(at), sp.diff(itw, xs).subs(at)]
out += [sp.diff(itw, xs, cs).subs(at), sp.diff(itw, cs, 2).subs(at)]

# Jacobians of F and the Hessian of L at p
x0, x1 = sp.symbols("x0 x1")
X = [x0, x1]
p = {x0: sp.Rational(1, 2), x1: sp.Rational(-1, 4)}
F = [x0 * x1, sp.sin(x0) + x1 * x1, sp.exp(x0 - x1)]
J = [[sp.diff(Fi, xj).subs(p) for xj in X] for Fi in F]
out += [v for row in J for v in row] * 2  # jacfwd, then jacrev


def L(X):
    y = list(X)
    for _ in range(3):
        s = y[0] + y[1]
        y = [y[i] * sp.tanh(X[i]) + s / 4 for i in range(2)]
    return sum(v * v for v in y)


Lx = L(X)
out += [sp.diff(Lx, xi, xj).subs(p) for xi in X for xj in X]
out += [sp.diff(Lx, xi).subs(p) for xi in X]
out += [sp.diff(t ** 3, t).subs(t, 2), sp.diff(t ** 3, t, 2).subs(t, 2)]
# hessian(fn (v) => sum(sin(pick(a)(v))) * v[1]): a > 0, so pick(a)(v) = v * a
H = sum(sp.sin(xi * a) for xi in X) * x1
out += [sp.diff(H, xi, xj).subs(p) for xi in X for xj in X]
# jacrev(fn (v) => pick(b)(v) * v[0]): b < 0, so pick(b)(v) = v * v
G = [xi * xi * x0 for xi in X]
out += [sp.diff(Gi, xj).subs(p) for Gi in G for xj in X]

print(json.dumps([float(sp.N(v, 30)) for v in out]))
