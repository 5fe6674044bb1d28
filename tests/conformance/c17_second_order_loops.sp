# Second reverse derivatives through loops: grad of grad through a while loop, a for loop,
# nested loops and a loop carrying a vector; the same through forward-over-reverse (jvp of
# grad) as a cross-check, and the gradient of a weighted sum of a vector loop's gradient.
# expected.json: sympy's symbolic second derivatives of the unrolled loops at the same inputs
# (0.7, 0.8, -1.2, 0.5, -0.3 rounded to f32 first, as `cast(0.7, f64)` rounds them).
def f(x: f64) {
    var y = x
    var i = 0
    while i < 3 {
        y = sin(y) * x
        i = i + 1
    }
    return y
}

def g(x: f64) {
    var y = x
    for k in range(4) {
        y = y * y * 0.5 + x
    }
    return y
}

def h(x: f64) {
    var y = x
    for i in range(2) {
        var z = y
        var j = 0
        while j < 2 {
            z = z * x + sin(z)
            j = j + 1
        }
        y = z * 0.5
    }
    return y
}

def q(w: f64[2]) {
    var v = cast([0.5, -0.3], f64)
    for k in range(3) {
        v = tanh(v * w + 0.1)
    }
    return sum(v * v)
}

def main() {
    let x = cast(0.7, f64)
    let one = cast(1.0, f64)
    print(grad(fn (z: f64) => grad(f)(z))(x), jvp(fn (z: f64) => grad(f)(z), (x,), (one,))[1])
    print(grad(fn (z: f64) => grad(g)(z))(x), jvp(fn (z: f64) => grad(g)(z), (x,), (one,))[1])
    print(grad(fn (z: f64) => grad(h)(z))(x), jvp(fn (z: f64) => grad(h)(z), (x,), (one,))[1])
    let w = cast([0.8, -1.2], f64)
    let c = cast([1.0, 2.0], f64)
    print(grad(fn (u: f64[2]) => sum(grad(q)(u) * c))(w))
}
