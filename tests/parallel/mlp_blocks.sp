# The MLP of the recomputation tests (tests/parallel/recompute_test.cpp, tests/sim): 16-32-32-8
# in f64 like mlp_small.sp, but the ReLU sits inside the layers (Block), so what a block's
# backward reads is the block's own work: what recomputing the block (a strategy's
# "recompute") frees in the forward pass and makes again in the backward pass.
let batch = 8

model Block(n_in: int, n_out: int) {
    param w: f64[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f64[n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) = relu(x @ w + b)
}

model Lin(n_in: int, n_out: int) {
    param w: f64[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f64[n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) = x @ w + b
}

model MLP() {
    param l1 = Block(16, 32)
    param l2 = Block(32, 32)
    param l3 = Lin(32, 8)
    def forward(x) = l3(l2(l1(x)))
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
