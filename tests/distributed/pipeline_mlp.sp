# A user's own training program (mlp_f64.sp with a module-level `let batch`, which a pipeline
# needs to build the step of a micro-batch; limit=544: 8 batches of 64 and a short one of 32,
# which has a type of its own and runs unpipelined on every rank), run unchanged on 1 rank and on a 2-stage pipeline
# (pp2.json: 4 micro-batches, 1F1B; dp2pp2.json: and 2 data-parallel ranks per stage); the test
# compares the printed lines and the checkpoint with the 1-rank run.

model MLP(hidden: int = 32) {
    param w1: f64[784, hidden] = normal(0.0, 0.05)
    param b1: f64[hidden] = zeros()
    param w2: f64[hidden, 10] = normal(0.0, 0.05)
    param b2: f64[10] = zeros()
    def forward(x) = relu(cast(x, f64) @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def adam_step(net, g, m, v, t) {
    let b1 = 0.9
    let b2 = 0.999
    let m2 = tree_map(fn (a, d) => b1 * a + (1.0 - b1) * d, m, g)
    let v2 = tree_map(fn (a, d) => b2 * a + (1.0 - b2) * d * d, v, g)
    let c1 = 1.0 - b1 ** t
    let c2 = 1.0 - b2 ** t
    let net2 = tree_map(fn (p, a, b) => p - 0.003 * (a / c1) / (sqrt(b / c2) + 1e-8), net, m2, v2)
    return (net2, m2, v2)
}

let batch = 64

def main() {
    var net = MLP(hidden=32, seed=0)
    var m = tree_map(fn (p) => p * 0.0, net)
    var v = tree_map(fn (p) => p * 0.0, net)
    var t = 0.0
    for epoch in range(2) {
        var total = 0.0
        for (x, y) in fashion_mnist("train", batch=batch, shuffle=true, seed=0, flatten=true, limit=544) {
            let (l, g) = value_and_grad(loss)(net, x, y)
            t = t + 1.0
            (net, m, v) = adam_step(net, g, m, v, cast(t, f64))
            total = total + cast(l, f32)
            print("step loss", l)
            report("loss", l)
        }
        var correct = 0.0
        var test_loss = 0.0
        for (x, y) in fashion_mnist("test", batch=128, flatten=true, limit=256) {
            let logits = net(x)
            test_loss = test_loss + cast(cross_entropy(logits, y), f32) * len(y)
            correct = correct + sum(cast(argmax(logits, axis=1) == y, f32))
        }
        print("epoch", epoch, "train", total / 8.0, "test", test_loss / 256.0, "acc", correct / 256.0)
        log_epoch(epoch + 1, test_loss=test_loss / 256.0, test_acc=correct / 256.0)
    }
    print("w1", sum(net.w1), "b1", sum(net.b1), "w2", sum(net.w2), "b2", sum(net.b2))
    save(net, "pipeline_mlp.ckpt")
}
