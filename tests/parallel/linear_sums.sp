# Two row-parallel products of one input, added (the pattern of the attention block's backward:
# the input gradients of the q, k and v projections are partial sums over the model axis and are
# added before anything needs them whole), then scaled, reshaped and read by a ReLU. In f64 for
# the sharded-run comparison (tests/parallel/search_linear_test.cpp).
let batch = 8

model Net() {
    param w1: f64[16, 32] = uniform(-0.25, 0.25)
    param w2: f64[16, 32] = uniform(-0.25, 0.25)
    param w3: f64[32, 8] = uniform(-0.2, 0.2)
    def forward(x) {
        let h = reshape((x @ w1 + x @ w2) * 0.5, (batch, 4, 8))
        return reshape(relu(h), (batch, 32)) @ w3
    }
}

def loss(net: Net, x, y) = cross_entropy(net(x), y)

def main() {
    var net = Net(seed=0)
    let x = normal(shape=(batch, 16), seed=1, dtype=f64)
    let y = cast(uniform(0.0, 8.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
