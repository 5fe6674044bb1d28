# Checkpoint and resume (ckpt_test.sh): two epochs without a break; saves a.ckpt.
model MLP(hidden: int = 32) {
    param w1: f64[784, hidden] = normal(0.0, 0.05)
    param b1: f64[hidden] = zeros()
    param w2: f64[hidden, 10] = normal(0.0, 0.05)
    param b2: f64[10] = zeros()
    def forward(x) = relu(cast(x, f64) @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def adam_step(net, g, m, v, t) {
    let m2 = tree_map(fn (a, d) => 0.9 * a + 0.1 * d, m, g)
    let v2 = tree_map(fn (a, d) => 0.999 * a + 0.001 * d * d, v, g)
    let c1 = 1.0 - 0.9 ** t
    let c2 = 1.0 - 0.999 ** t
    let net2 = tree_map(fn (p, a, b) => p - 0.003 * (a / c1) / (sqrt(b / c2) + 1e-8), net, m2, v2)
    return (net2, m2, v2)
}

def epoch(net, m, v, t) {
    var (n, m1, v1, t1) = (net, m, v, t)
    for (x, y) in fashion_mnist("train", batch=64, flatten=true, limit=256) {
        let (l, g) = value_and_grad(loss)(n, x, y)
        t1 = t1 + 1.0
        (n, m1, v1) = adam_step(n, g, m1, v1, cast(t1, f64))
    }
    return (n, m1, v1, t1)
}

def main() {
    var net = MLP(hidden=32, seed=0)
    var (m, v, t) = (tree_map(fn (p) => p * 0.0, net), tree_map(fn (p) => p * 0.0, net), 0.0)
    (net, m, v, t) = epoch(net, m, v, t)
    (net, m, v, t) = epoch(net, m, v, t)
    save(net, "a.ckpt")
}
