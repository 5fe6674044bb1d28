# A multi-layer perceptron trained by gradient descent with Spora's own automatic
# differentiation. (Fashion-MNIST training arrives with the data pipeline and the optimisers
# of std.optim; this version fits a small synthetic problem so it runs anywhere in a second.)
import std.nn

model MLP(n_in: int, hidden: int, n_out: int) {
    param l1 = Dense(n_in, hidden)
    param l2 = Dense(hidden, n_out)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(4, 32, 3, seed=0)
    let x = normal(shape=(256, 4), seed=1)
    let y = argmax(x[:, 0:3], axis=1)
    for step in range(301) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        net = tree_map(fn (p, d) => p - 0.5 * d, net, g)
        if step % 100 == 0 {
            print("step", step, "loss", l)
        }
    }
    print("train accuracy", mean(cast(argmax(net(x), axis=1) == y, f32)))
}
