# Fashion-MNIST with the multi-layer perceptron of fashion_mlp.sp, trained in mixed precision:
# the network computes in f16 (O2: everything but the loss; master weights, the loss and the
# Adam update in f32) with dynamic loss scaling (std.amp, PyTorch GradScaler's defaults).
#
#   ./spora run examples/fashion_mlp_amp.sp                          # O2 f16 + loss scaling
#   ./spora run examples/fashion_mlp_amp.sp --amp O1 --amp-dtype bf16   # autocast in bf16
#   ./spora run examples/fashion_mlp_amp.sp --amp O0                 # the f32 baseline
#
# --amp overrides the set_amp below. With bf16 the scaler is harmless but unneeded (bf16 has
# f32's exponent range). Prints the test accuracy and the loss scale after each epoch.
# Test accuracy after 3 epochs (measured on the 2-core development machine, 12-25 s a run):
# f32 (O0) 87.9 %, O1 bf16 87.9 %, O1 f16 88.0 %, O2 f16 88.0 %, O3 bf16 88.0 %. The f16 runs'
# scale grows to 131072 after 2000 finite steps and an overflow halves it back (that step is
# skipped).
import std.nn
import std.optim
import std.amp

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    set_amp("O2", f16)
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001, schedule=cosine_annealing_lr(0.001, 3 * 938))
    var state = opt.init(net)
    var scaler = loss_scaler()
    for epoch in range(3) {
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=0, flatten=true, progress=true) {
            let (l, g) = scaled_value_and_grad(loss, scaler)(net, x, y)
            (net, state, scaler) = scaler.step(opt, net, g, state)
            report("loss", l)
        }
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=1000, flatten=true) {
            correct = correct + sum(cast(argmax(net(x), axis=1) == y, f32))
        }
        print("epoch", epoch + 1, "test_acc", correct / 10000.0, "loss_scale", scaler.scale)
    }
}
