# tests/parallel/mlp_small.sp with Megatron's tensor parallelism written as annotations
# (semi-auto) instead of a strategy file: layer 2 column-parallel (its
# weight cut along the outputs, its input whole), layer 3 row-parallel (its weight cut along the
# inputs, its input cut alike). Sharding propagation from these pins (spora search --algo
# propagate, spora run --mesh 4) finds the rest: spmd_common.h's kTp4 (l2.b cut with l2's
# outputs, everything else replicated), and the partitioned step runs the same two all-reduces.
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
    def forward(x) {
        let h1 = relu(l1(x))
        let h2 = relu(matmul(h1, l2.w, shard=((1, 1), (1, 4))) + l2.b)
        return matmul(h2, l3.w, shard=((1, 4), (4, 1))) + l3.b
    }
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
