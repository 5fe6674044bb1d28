# examples/fashion_mlp.sp with limit= (1000 training images: 15 batches of 64 and one of 40;
# 1000 test images; 2 epochs): the distributed tests run it unchanged otherwise on 2 and 4 ranks
# against one device. `let batch` is for --auto (the strategy search builds the training step
# with that batch) and for pipelines (the step of a micro-batch).
import std.nn
import std.optim

let batch = 64

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001, schedule=cosine_annealing_lr(0.001, 2 * 16))
    var state = opt.init(net)
    for epoch in range(2) {
        for (x, y) in fashion_mnist("train", batch=batch, shuffle=true, seed=0, flatten=true, progress=true, limit=1000) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            (net, state) = opt.update(net, g, state)
            report("loss", l)
        }
        var test_loss = 0.0
        var correct = 0.0
        for (x, y) in fashion_mnist("test", batch=500, flatten=true, limit=1000) {
            let logits = net(x)
            test_loss = test_loss + cross_entropy(logits, y) * len(y)
            correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
        }
        log_epoch(epoch + 1, test_loss=test_loss / 1000.0, test_acc=correct / 1000.0)
    }
    save_curves("fashion_mlp")
    save(net, "fashion_mlp.ckpt")
}
