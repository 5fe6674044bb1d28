# The soak benchmark's program (benchmarks/soak/run.sh): the Fashion-MNIST MLP of
# examples/fashion_mlp.sp (784-256-10, Adam) trained epoch after epoch on the whole training
# set, evaluated on the whole test set after each epoch, a checkpoint saved after each. It runs
# until it is stopped; the script samples its memory once a minute.
import std.nn
import std.optim

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001)
    var state = opt.init(net)
    for epoch in range(1000000) {
        var train_loss = 0.0
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=epoch, flatten=true) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            (net, state) = opt.update(net, g, state)
            train_loss = train_loss + l * len(y)
        }
        var test_loss = 0.0
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=1000, flatten=true) {
            let logits = net(x)
            test_loss = test_loss + cross_entropy(logits, y) * len(y)
            correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
        }
        print("epoch", epoch + 1, train_loss / 60000.0, test_loss / 10000.0, correct / 10000.0)
        save(net, "soak.ckpt")
    }
}
