# W3 of benchmarks/workloads/README.md: one training step of LeNet-5 on a batch of 64 images
# 1x28x28: conv 1->6 5x5 pad 2, ReLU, maxpool 2; conv 6->16 5x5, ReLU, maxpool 2; dense
# 400-120-84-10 with ReLU; cross-entropy with integer labels, backward, SGD update (lr 0.01).
# f32; convolutions and dense layers have biases, initialised like PyTorch's (uniform
# +-1/sqrt(fan_in)); dense weights stored [in, out].
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's inputs, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.

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

# One SGD step: returns the loss and the updated parameters.
def step(net: LeNet5, x, y) {
    let (l, g) = value_and_grad(loss)(net, x, y)
    return (l, tree_map(fn (p, d) => p - 0.01 * d, net, g))
}

def inputs() = (LeNet5(seed=0), normal(shape=(64, 1, 28, 28), seed=1),
                cast(uniform(0.0, 10.0, shape=(64,), seed=2), i32))

# k training steps from fresh inputs; eager mode unrolls the loop. After each step: print
# the loss if check, else the step index (eager mode's benchmark times the steps between
# these marks).
def run_steps(k, check) {
    let (net0, x, y) = inputs()
    var net = net0
    for i in range(k) {
        let (l, next) = step(net, x, y)
        net = next
        if check {
            print(l)
        } else {
            print(i)
        }
    }
}

def main() {
    let (net, x, y) = inputs()
    let (l, next) = step(net, x, y)
    print(l)
    return (net, x, y)
}
