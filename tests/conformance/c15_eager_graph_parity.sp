# Programs graph mode accepts that eager mode must accept too, printing the same numbers: a
# run-time seed for batches (the epoch loop's variable is run-time in graph mode; the order it
# gives is checked by tests/golden/d01_batches.sp and d02_batches_eager.sp), loops with
# run-time bounds and a while loop inside @jit and @checkpoint functions (lowered as graphs in
# both modes), attributes of a conditional's value, and recursion deeper than 64 calls.
@jit
def scaled(x, n: i32) {
    var acc = x
    for i in range(n) {
        acc = acc * 2.0
    }
    for row in x {
        acc = acc + row
    }
    var k = 0
    while sum(acc) > 1.0 {
        acc = acc * 0.5
        k = k + 1
    }
    return (acc, k)
}

@checkpoint
def cube_sum(x) {
    var acc = x
    for i in range(2) {
        acc = acc * x
    }
    return sum(acc)
}

def pw(x, n: i32) -> f32 = 1.0 if n == 0 else x * pw(x, n - 1)

def main() {
    let x = reshape(cast(arange(12), f32), (6, 2))
    let y = arange(6)
    for epoch in range(2) {
        var total = 0
        var count = 0
        for (xb, yb) in batches(x, y, batch=3, shuffle=true, seed=epoch + 7) {
            total = total + sum(yb * yb)
            count = count + 1
        }
        print(epoch, total, count)
    }
    let v = [1.0, 2.0]
    let (a, k) = scaled(v, 3)
    print(a, k)
    print(cube_sum(v), grad(cube_sum)(v))
    let c = sum(v) > 0.0
    let m = 1 if c else 2
    print(len(shape(m)), m)
    print(pw(1.01, 100), grad(pw)(1.01, 100))
}
