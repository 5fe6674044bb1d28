# The training step of the strategy exercise: a three-layer perceptron, cross-entropy over 1024
# classes, one SGD step. The grader simulates it with a global batch of 4096 on cluster.yaml.
import std.nn

let batch = 64

model Net() {
    param l1 = Dense(1024, 4096)
    param l2 = Dense(4096, 4096)
    param l3 = Dense(4096, 1024)
    def forward(x) = l3(relu(l2(relu(l1(x)))))
}

def loss(net: Net, x, y) = cross_entropy(net(x), y)

def main() {
    var net = Net(seed=0)
    let x = normal(shape=(batch, 1024), seed=1)
    let y = cast(uniform(0.0, 1024.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
