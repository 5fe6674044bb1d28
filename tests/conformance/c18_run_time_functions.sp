# Function values chosen at run time (graph mode: a union of the candidate functions, carried as
# a tag and their captured values, and called through a switch over the candidates; eager mode
# knows each condition), and hessian / jacfwd / jacrev (JAX's semantics and shapes).
# expected.json: c18_run_time_functions.py (sympy's symbolic derivatives along the branches the
# inputs take; every input is a dyadic rational, exact in f32 and f64).
def pick(c) = (fn (x) => x * c) if c > 0.0 else (fn (x) => x * x)

# An if statement reassigns a closure; both capture run-time tensors.
def scale_or_shift(c, k) {
    var f = fn (x) => x + c
    if k > 1.0 {
        f = fn (x) => x * c * k
    }
    return f
}

# A loop carries a function that each iteration chooses again (first the identity, then one of
# two lambdas capturing c).
def iterate(c: f64, x: f64, n: i32) {
    var f = fn (z) => z
    var y = x
    for i in range(n) {
        y = f(y)
        f = (fn (z) => sin(z) * c) if y > 0.25 else (fn (z) => z * z + c)
    }
    return y
}

# The same through a while loop whose trip count depends on the values.
def iterate_while(c: f64, x: f64) {
    var f = fn (z) => z
    var y = x
    while y < 4.0 {
        y = f(y) + 0.5
        f = (fn (z) => z * c + 0.25) if y < 2.0 else (fn (z) => z * z)
    }
    return y
}

# R^2 -> R^3, and a scalar function through a loop.
def F(x: f64[2]) = [x[0] * x[1], sin(x[0]) + x[1] * x[1], exp(x[0] - x[1])]

def L(x: f64[2]) {
    var y = x
    for k in range(3) {
        y = y * tanh(x) + sum(y) * 0.25
    }
    return sum(y * y)
}

def main() {
    let a = cast(1.5, f64)
    let b = cast(-0.5, f64)
    let two = cast(2.0, f64)
    # pick's value and its gradient through the captured c
    print(pick(a)(two), pick(b)(two))
    print(grad(fn (c) => pick(c)(c * 3.0))(a), grad(fn (c) => pick(c)(c * 3.0))(b))
    # closures chosen at run time, stored in a tuple
    let fs = (pick(a), pick(b))
    print(fs[0](two) + fs[1](cast(3.0, f64)))
    # an if statement's closure, with the gradient with respect to the captured tensor
    let c = cast([1.0, 2.0], f64)
    let x = cast([0.5, 0.25], f64)
    for k in (cast(2.0, f64), cast(0.5, f64)) {
        print(scale_or_shift(c, k)(x), grad(fn (cc) => sum(scale_or_shift(cc, k)(x) * x))(c))
    }
    # a loop carrying a run-time chosen function, and its derivatives
    let cc = cast(0.75, f64)
    let x0 = cast(0.5, f64)
    print(iterate(cc, x0, 4), grad(iterate)(cc, x0, 4), grad(iterate, wrt=1)(cc, x0, 4))
    print(iterate_while(cc, x0), grad(iterate_while)(cc, x0), grad(iterate_while, wrt=1)(cc, x0))
    print(grad(fn (u) => grad(iterate_while, wrt=1)(u, x0))(cc), hessian(iterate_while)(cc, x0))
    # Jacobians and Hessians
    let p = cast([0.5, -0.25], f64)
    print(jacfwd(F)(p), jacrev(F)(p))
    print(hessian(L)(p))
    print(jacrev(L)(p), jacfwd(fn (t) => t * t * t)(two), hessian(fn (t) => t * t * t)(two))
    # through a closure chosen at run time
    print(hessian(fn (v) => sum(sin(pick(a)(v))) * v[1])(p))
    print(jacrev(fn (v) => pick(b)(v) * v[0])(p))
}
