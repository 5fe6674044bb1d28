# One epoch of examples/fashion_mlp.sp, as validate.py times it on 1, 2 and 4 MPI ranks: the MLP
# 784-256-10 (ReLU) on Fashion-MNIST (Debian's dataset-fashion-mnist), batch 64, shuffled,
# Adam with the cosine schedule, then the evaluation pass over the 10,000 test images. The
# progress bar's last line gives the training loop's median step ("X ms/step"), the figure compared.
# The loader reads `batch` images a step: `spora sim` takes the same file, sets `batch` and
# simulates the loop's training step (value_and_grad of the loss; Adam's update by --optimizer).
#
#   spora run benchmarks/sim/validate/fashion_epoch.sp --ranks 2 --strategy dp
#   spora sim benchmarks/sim/validate/fashion_epoch.sp --cluster SPEC --strategy S --batch 64 \
#       --optimizer adam --update fused
import std.nn
import std.optim

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

let batch = 64

def main() {
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001, schedule=cosine_annealing_lr(0.001, 938))
    var state = opt.init(net)
    for (x, y) in fashion_mnist("train", batch=batch, shuffle=true, seed=0, flatten=true, progress=true) {
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
