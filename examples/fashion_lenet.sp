# Fashion-MNIST with LeNet-5 (two 5x5 convolutions with max pooling, then 120-84-10), trained
# by Adam with a cosine learning-rate schedule (std.optim) on the real dataset (Debian's
# dataset-fashion-mnist).
#
#   ./spora run examples/fashion_lenet.sp
#
# Images arrive as f32[64,1,28,28] (NCHW); the first convolution pads by 2 so the classic
# 32x32 geometry holds. Writes runs/fashion_lenet.csv / .svg and runs/fashion_lenet.ckpt.
# Reaches 90.6 % test accuracy in 10 epochs.
import std.nn
import std.optim

model LeNet() {
    param c1 = Conv2d(1, 6, 5, padding=2)
    param c2 = Conv2d(6, 16, 5)
    param f1 = Dense(400, 120)
    param f2 = Dense(120, 84)
    param f3 = Dense(84, 10)
    def forward(x) {
        let h1 = max_pool2d(relu(c1(x)), 2)
        let h2 = max_pool2d(relu(c2(h1)), 2)
        let h = reshape(h2, (shape(h2)[0], 400))
        return f3(relu(f2(relu(f1(h)))))
    }
}

def loss(net: LeNet, x, y) = cross_entropy(net(x), y)

def main() {
    var net = LeNet(seed=0)
    let opt = adam(lr=0.002, schedule=cosine_annealing_lr(0.002, 10 * 938))
    var state = opt.init(net)
    for epoch in range(10) {
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=0, progress=true) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            (net, state) = opt.update(net, g, state)
            report("loss", l)
        }
        var test_loss = 0.0
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=500) {
            let logits = net(x)
            test_loss = test_loss + cross_entropy(logits, y) * len(y)
            correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
        }
        log_epoch(epoch + 1, test_loss=test_loss / 10000.0, test_acc=correct / 10000.0)
    }
    save_curves("runs/fashion_lenet")
    save(net, "runs/fashion_lenet.ckpt")
}
