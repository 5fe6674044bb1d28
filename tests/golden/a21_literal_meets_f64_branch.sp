# A number literal in one branch of a run-time choice and an f64 in the other: the literal takes
# the f64's dtype, as it does in arithmetic with it (graph and eager mode alike), in a
# conditional expression, an if that returns, an if that assigns, and a recursion's base case.
def pw(x: f64, n: i32) -> f64 = 1.0 if n == 0 else x * pw(x, n - 1)
def pick(x: f64, c) = 0.5 if c else x
def clamp(x: f64) -> f64 {
    if x > 2.0 {
        return 2.0
    }
    return x
}
def main() {
    let x: f64 = 1.5
    let n = cast(sum([1.0, 2.0]), i32)
    print(pw(x, n), grad(fn (u: f64) => pw(u, n))(x))
    let c = x > 1.0
    print(pick(x, c), pick(x, not c), clamp(x), clamp(x * 2.0))
    var y = x
    if x > 1.0 {
        y = 3.0
    }
    print(y * 2.0)
}
# CHECK: 3.375 6.75
# CHECK: 0.5 1.5 1.5 2.0
# CHECK: 6.0
