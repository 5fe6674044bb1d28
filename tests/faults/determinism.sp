# Determinism: a small LeNet-like network trained by Adam on 512 shuffled Fashion-MNIST images
# (2 epochs of 8 steps), then evaluated; fused whole-tensor sums in f64 besides. Every loss,
# parameter sum and count is printed at full precision (shortest round-trip digits), so two
# runs printing the same text computed the same bits. tests/faults/determinism_test.sh runs it
# twice and with 1, 2 and 3 threads.
import std.nn
import std.optim

model Net {
    param c1 = Conv2d(1, 4, 5)
    param l1 = Dense(4 * 12 * 12, 64)
    param l2 = Dense(64, 10)
    def forward(x) = l2(relu(l1(reshape(max_pool2d(relu(c1(x)), 2), (len(x), 4 * 12 * 12)))))
}

def loss(net: Net, x, y) = cross_entropy(net(x), y)

def main() {
    var net = Net(seed=0)
    let opt = adam(lr=0.001)
    var state = opt.init(net)
    for epoch in range(2) {
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=epoch, limit=512) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            (net, state) = opt.update(net, g, state)
            print("loss", l)
        }
        print("sums", sum(net.c1.w), sum(net.l1.w), sum(net.l1.b), sum(net.l2.w), sum(net.l2.b))
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=100, limit=300) {
            correct = correct + sum(cast(argmax(net(x), axis=1) == y, f32))
        }
        print("correct", correct)
    }
    let x = normal(0.0, 1.0, shape=(3000, 1000), seed=1, dtype=f64)
    print("f64 sums", sum(x * x + 0.5 * x), sum(x), sum(exp(x * 0.01)))
    let y = normal(0.0, 1.0, shape=(2000, 1000), seed=2)
    print("f32 sums", sum(exp(y * 0.1) * y), mean(y * y), max(y * 3.0))
}
