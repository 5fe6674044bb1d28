# W2 of benchmarks/workloads/README.md: the MLP 784-512-512-10 with ReLU, cross-entropy with
# integer labels, one SGD step (lr 0.01) on `batch` examples. `spora sim` and `spora run-dp`
# set `batch` to the per-rank batch; `spora run` runs one step as written.
import std.nn

let batch = 64

model MLP() {
    param l1 = Dense(784, 512)
    param l2 = Dense(512, 512)
    param l3 = Dense(512, 10)
    def forward(x) = l3(relu(l2(relu(l1(x)))))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(seed=0)
    let x = normal(shape=(batch, 784), seed=1)
    let y = cast(uniform(0.0, 10.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
