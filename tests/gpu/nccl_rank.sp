# A rank of a one-rank world over NCCL on one GPU (tests/gpu/run.sh, step 6): three SGD steps
# whose losses must equal the single-device run on the same GPU.
model Net() {
    param w: f32[8, 4] = uniform(-0.5, 0.5)
    param b: f32[4] = zeros()
    def forward(x) = x @ w + b
}
def loss(net: Net, x, y) = cross_entropy(net(x), y)
def main() {
    var net = Net(seed=0)
    let x = normal(shape=(16, 8), seed=1)
    let y = cast(uniform(0.0, 4.0, shape=(16,), seed=2), i32)
    for i in range(3) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        print(l)
        net = tree_map(fn (p, d) => p - 0.1 * d, net, g)
    }
}
