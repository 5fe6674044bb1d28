# examples/fashion_lenet.sp with limit= (512 training and 500 test images, 2 epochs): the
# distributed tests run it otherwise unchanged on 2 ranks against one device.
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
    let opt = adam(lr=0.002, schedule=cosine_annealing_lr(0.002, 2 * 8))
    var state = opt.init(net)
    for epoch in range(2) {
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=0, progress=true, limit=512) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            (net, state) = opt.update(net, g, state)
            report("loss", l)
        }
        var test_loss = 0.0
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=500, limit=500) {
            let logits = net(x)
            test_loss = test_loss + cross_entropy(logits, y) * len(y)
            correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
        }
        log_epoch(epoch + 1, test_loss=test_loss / 500.0, test_acc=correct / 500.0)
    }
    save_curves("fashion_lenet")
    save(net, "fashion_lenet.ckpt")
}
