# A small f64 MLP with a skip connection: cutting before l2 sends both l1(x) and relu(l1(x)) to
# the next stage, which the pipeline rejects (tests/parallel/pipeline_test.cpp).
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
    def forward(x) = l3(relu(l2(l1(x))) + relu(l1(x)))
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
