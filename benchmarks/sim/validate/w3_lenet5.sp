# W3 (benchmarks/workloads/w3_lenet5_train.sp: one LeNet-5 training step) as a
# training step for `spora sim` and `spora train-step --strategy`: LeNet-5 on `batch` images 1x28x28
# (conv 1->6 5x5 pad 2, ReLU, maxpool 2; conv 6->16 5x5, ReLU, maxpool 2; dense 400-120-84-10
# with ReLU), cross-entropy with integer labels, one SGD step (lr 0.01). Both commands set
# `batch`; the parameters are named so that strategies can split the dense layers.
let batch = 64

model LeNet5() {
    param c1: f32[6, 1, 5, 5] = uniform(-0.2, 0.2)
    param cb1: f32[6] = uniform(-0.2, 0.2)
    param c2: f32[16, 6, 5, 5] = uniform(-0.08165, 0.08165)
    param cb2: f32[16] = uniform(-0.08165, 0.08165)
    param f1: f32[400, 120] = uniform(-0.05, 0.05)
    param fb1: f32[120] = uniform(-0.05, 0.05)
    param f2: f32[120, 84] = uniform(-0.09129, 0.09129)
    param fb2: f32[84] = uniform(-0.09129, 0.09129)
    param f3: f32[84, 10] = uniform(-0.1091, 0.1091)
    param fb3: f32[10] = uniform(-0.1091, 0.1091)
    def forward(x) {
        let h1 = max_pool2d(relu(conv2d(x, c1, cb1, padding=2)), kernel=2)
        let h2 = max_pool2d(relu(conv2d(h1, c2, cb2)), kernel=2)
        let h = flatten(h2)
        return relu(relu(h @ f1 + fb1) @ f2 + fb2) @ f3 + fb3
    }
}

def loss(net: LeNet5, x, y) = cross_entropy(net(x), y)

def main() {
    var net = LeNet5(seed=0)
    let x = normal(shape=(batch, 1, 28, 28), seed=1)
    let y = cast(uniform(0.0, 10.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
