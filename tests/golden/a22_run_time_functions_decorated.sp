# A function chosen by a run-time condition called inside @jit, @checkpoint and @custom_grad
# functions, kept in a tuple and called in a loop, and differentiated through its captured
# value. pick(c)(x) is x * c for c > 0, else x + c.
def pick(c: f32) = (fn (x: f32) => x * c) if c > 0.0 else (fn (x: f32) => x + c)

@jit
def k(x: f32, c: f32) = pick(c)(x) * x

@checkpoint
def g(x: f32, c: f32) = pick(c)(x) * x

# The reverse-mode derivative is h_grad's: 2 g for x, out * g for c.
@custom_grad(h_grad)
def h(x: f32, c: f32) = pick(c)(x)

def h_grad(x: f32, c: f32, out: f32, d: f32) = (d * 2.0, d * out)

def main() {
    # x c x = 2 * 3 * 2 = 12, d/dx 2 c x = 12; x + c = -1, times x: -2, d/dx 2x + c = 1
    print(k(2.0, 3.0), grad(k)(2.0, 3.0), k(2.0, -3.0), grad(k)(2.0, -3.0))
    print(grad(g)(2.0, 3.0), grad(g, wrt=1)(2.0, 3.0), grad(g)(2.0, -3.0))
    print(h(2.0, 3.0), grad(h)(2.0, 3.0), grad(h, wrt=1)(2.0, -3.0))
    # acc <- acc + 2 (acc + 1) + 0, three times: 2, 8, 26
    let fs = (pick(2.0), pick(-1.0))
    var acc = 0.0
    for i in range(3) {
        acc = acc + fs[0](acc + 1.0) + fs[1](1.0)
    }
    print(acc)
    # d/dc 3c (2 - c) = 6 - 6c at 1.5
    print(grad(fn (c) => pick(c)(3.0) * pick(-c)(2.0))(1.5))
}
# CHECK: 12.0 12.0 -2.0 1.0
# CHECK-NEXT: 12.0 4.0 1.0
# CHECK-NEXT: 6.0 2.0 -1.0
# CHECK-NEXT: 26.0
# CHECK-NEXT: -3.0
