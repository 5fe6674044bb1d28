# The training step of fashion_epoch.sp for `spora sim` (its loss on one batch of `batch`
# flattened 28x28 images; `spora sim --optimizer adam` adds Adam's update): the MLP 784-256-10.
import std.nn

let batch = 64

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=256, seed=0)
    let x = normal(shape=(batch, 784), seed=1)
    let y = cast(uniform(0.0, 10.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.001 * d, net, g)
    print("loss", l)
}
