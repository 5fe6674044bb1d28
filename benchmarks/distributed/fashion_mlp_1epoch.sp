# examples/fashion_mlp.sp for one epoch, without its evaluation's plots: what
# benchmarks/distributed/run.sh times on 1 and 2 ranks (938 steps of batch 64 and a test pass).
# The training data's progress bar gives the median time per step on its last line.
import std.nn
import std.optim

let batch = 64   # the training-step harness (spora train-step) reads it

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001, schedule=cosine_annealing_lr(0.001, 938))
    var state = opt.init(net)
    for (x, y) in fashion_mnist("train", batch=batch, shuffle=true, seed=0, flatten=true, progress=true) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        (net, state) = opt.update(net, g, state)
    }
    var correct = 0.0
    for (x, y) in fashion_mnist("test", batch=1000, flatten=true) {
        correct = correct + sum(cast(argmax(net(x), axis=1) == y, f32))
    }
    print("test_acc", correct / 10000.0)
}
