# Recursive functions without a declared return type: the base case (the branch that does not
# call the function again) gives the type of the recursive calls' results. Direct and mutual
# recursion, expression and statement bodies, scalar, tensor, bool and tuple results, under grad
# and inside a @jit function.
def pw(x, n: i32) = 1.0 if n == 0 else x * pw(x, n - 1)

def fib2(x, n: i32) {
    if n == 0 {
        return (x, x * 0.0 + 1.0)
    }
    let (a, b) = fib2(x, n - 1)
    return (b, a + b * x)
}

def is_even(n: i32) = true if n == 0 else is_odd(n - 1)
def is_odd(n: i32) = false if n == 0 else is_even(n - 1)

def ping(x, n: i32) = x if n == 0 else sin(pong(x, n - 1))
def pong(x, n: i32) = x * x if n == 0 else ping(x, n - 1) * 2.0

def total(xs, n: i32) = sum(xs) if n == 0 else total(xs * 0.5, n - 1) + xs[0]

@jit
def jit_pw(x, n: i32) = pw(x, n)

def main() {
    print(pw(1.5, 3), grad(pw)(1.5, 3))
    print(fib2(1.5, 4))
    print(grad(fn (z) => fib2(z, 4)[1])(1.5))
    print(int(is_even(10)), int(is_odd(7)), int(is_even(3)))
    print(ping(0.7, 3), grad(ping)(0.7, 3))
    let v = [1.0, 2.0, 3.0]
    print(total(v, 2), grad(total)(v, 2))
    print(jit_pw(2.0, 10))
}
