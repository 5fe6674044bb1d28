# A function chosen by a run-time condition: graph mode carries which function it is (a tag)
# and what it captured, and calls it through a switch over the candidates; eager mode knows the
# condition. Both print the same, derivatives through the captured values included.
def pick(c) {
    if c > 0.0 {
        return fn (x) => x * c
    }
    return fn (x) => x + c
}
def halve(x) = x * 0.5
def twice(x) = x * 2.0
model Scale() {
    param w: f32[2] = ones()
    def forward(x) = x * w
}
def main() {
    let c = sum([1.0, 2.0])
    print(pick(c)(3.0), pick(-c)(3.0))
    let f = halve if c > 1.0 else twice
    print(f(4.0))
    print(grad(fn (k) => pick(k)(3.0))(c), grad(fn (k) => pick(k)(3.0))(-c))
    # a model called as a function meets functions as its forward method
    let net = Scale()
    let h = net if c > 5.0 else (fn (x) => x * 2.0)
    let k = net if c > 1.0 else (fn (x) => x * 2.0)
    print(h([1.0, 2.0]), k([1.0, 2.0]))
    print(grad(fn (m) => sum((m if c > 1.0 else twice)([1.0, 2.0])))(net).w)
}
# CHECK: 9.0 0.0
# CHECK: 2.0
# CHECK: 3.0 1.0
# CHECK: [2.0, 4.0] [1.0, 2.0]
# CHECK: [1.0, 2.0]
