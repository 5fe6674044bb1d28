# A recursive function without a return type whose base case is a number literal: the literal
# takes its type from its use, as any literal does, so pw on an f64 x returns f64 (the type is
# inferred by a fixed point over the recursive calls). Derivatives of every order go through
# it, in graph and eager mode alike.
def pw(x, n: i32) = 1.0 if n == 0 else x * pw(x, n - 1)

def pw_stmt(x, n: i32) {
    if n == 0 {
        return 1.0
    }
    return x * pw_stmt(x, n - 1)
}

def fact(n: i32) = 1 if n == 0 else n * fact(n - 1)

def f(x: f64[2]) = pw(x[0], 3) * pw_stmt(x[1], 2)

def main() {
    let x = cast([1.5, 2.0], f64)
    # 1.5^3 = 3.375, d/dy y^2 at 3 = 6, 5! = 120
    print(pw(x[0], 3), grad(fn (y) => pw_stmt(y, 2))(cast(3.0, f64)), fact(5))
    # d2/dy2 y^4 = 12 y^2 = 48 at 2
    print(grad(fn (z) => grad(fn (y) => pw(y, 4))(z))(cast(2.0, f64)))
    # x0^3 x1^2: [[6 x0 x1^2, 6 x0^2 x1], [6 x0^2 x1, 2 x0^3]]
    print(hessian(f)(x))
    print(pw(x[0], 3).dtype)
}
# CHECK: 3.375 6.0 120
# CHECK-NEXT: 48.0
# CHECK-NEXT: [[36.0, 27.0], [27.0, 6.75]]
# CHECK-NEXT: f64
