# One epoch of examples/fashion_mlp.sp, as validate.py times it on 1, 2 and 4 MPI ranks: the MLP
# 784-256-10 (ReLU) on Fashion-MNIST (Debian's dataset-fashion-mnist), batch 64, shuffled,
# Adam with the cosine schedule, then the evaluation pass over the 10,000 test images. The
# progress bar's last line gives the training loop's median step ("X ms/step"), the figure compared.
#
#   spora run benchmarks/sim/validate/fashion_epoch.sp --ranks 2 --strategy dp
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
    let opt = adam(lr=0.001, schedule=cosine_annealing_lr(0.001, 938))
    var state = opt.init(net)
    for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=0, flatten=true, progress=true) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        (net, state) = opt.update(net, g, state)
        report("loss", l)
    }
    var test_loss = 0.0
    var correct = 0.0
    for (x, y) in fashion_mnist("test", batch=1000, flatten=true) {
        let logits = net(x)
        test_loss = test_loss + cross_entropy(logits, y) * len(y)
        correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
    }
    log_epoch(1, test_loss=test_loss / 10000.0, test_acc=correct / 10000.0)
}
