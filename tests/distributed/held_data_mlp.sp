# A training program whose data is tensors it makes itself, not a dataset's batches: under data
# parallelism each rank computes the loss on its rows of x and y, cut where the derivative reads
# them (backends/distributed/batch_cut.h). In f64, so that the ranks' run can be held to 1e-10
# of one device: the losses it prints, the parameter sums and the checkpoint (compare_ckpt.sp's
# model: 784-32-10).

model MLP(hidden: int = 32) {
    param w1: f64[784, hidden] = normal(0.0, 0.05)
    param b1: f64[hidden] = zeros()
    param w2: f64[hidden, 10] = normal(0.0, 0.05)
    param b2: f64[10] = zeros()
    def forward(x) = relu(x @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=32, seed=0)
    let x = normal(shape=(64, 784), seed=1, dtype=f64)
    let y = cast(uniform(0.0, 10.0, shape=(64,), seed=2), i32)
    for step in range(5) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        net = tree_map(fn (p, d) => p - 0.1 * d, net, g)
        print("step", step, "loss", l)
    }
    print("w1", sum(net.w1), "b1", sum(net.b1), "w2", sum(net.w2), "b2", sum(net.b2))
    save(net, "held_data_mlp.ckpt")
}
