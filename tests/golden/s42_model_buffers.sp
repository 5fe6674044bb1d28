# `let` fields holding tensors are buffers: carried with the model (through functions, loops and
# tree_map) but not differentiated (their gradient is none); replace(m, field=v) copies a model
model Stat(n: int) {
    param w: f32[n] = ones()
    let total: f32[n] = zeros()
    let scale = 2.0
    def forward(x) = x * w * scale + total
    def record(x) = replace(self, total=total + x)
}

def loss(m: Stat, x) = sum(m(x) * m(x))

def main() {
    var m = Stat(2)
    let x = [1.0, 2.0]
    for i in range(3) {
        let g = grad(loss)(m, x)
        m = tree_map(fn (p, d) => p - 0.01 * d, m.record(x), g)
    }
    print(m.total, g_is_none(m, x))
    print(m.w)
    print(m(x))
    # forward mode: a tangent with the model's structure; the buffer's entry is ignored
    let s = Stat(2)
    let (y, t) = jvp(fn (k) => sum(k(x)), (s,), (tree_map(fn (p) => p * 0.0 + 1.0, s),))
    print(y, t)
}

def g_is_none(m, x) = grad(loss)(m, x).total == none
# python3: w, t, x = [1, 1], [0, 0], [1, 2]; 3 times: g = 4 (2 x w + t) x (before the record),
# t += x, w -= 0.01 g  ->  t = [3, 6], w = [0.661888, -0.114368], m(x) = [4.323776, 5.542528]
# CHECK: [3.0, 6.0] true
# CHECK-NEXT: [0.661888, -0.114368]
# CHECK-NEXT: [4.3237762, 5.542528]
# CHECK-NEXT: 6.0 6.0
