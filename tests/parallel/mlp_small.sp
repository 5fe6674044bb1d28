# The small MLP of the sharded-run tests (tests/parallel): 16-32-32-8 with ReLU, in f64 so a
# sharded run can be compared with the single-device one to 1e-10, cross-entropy with integer
# labels, one SGD step on `batch` examples. `spora run --strategy` replaces every value by its
# own seeded data (backends/distributed/train_step.h); the initialisers below only give the types.
let batch = 8

model Lin(n_in: int, n_out: int) {
    param w: f64[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f64[n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) = x @ w + b
}

model MLP() {
    param l1 = Lin(16, 32)
    param l2 = Lin(32, 32)
    param l3 = Lin(32, 8)
    def forward(x) = l3(relu(l2(relu(l1(x)))))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(seed=0)
    let x = normal(shape=(batch, 16), seed=1, dtype=f64)
    let y = cast(uniform(0.0, 8.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
