# W2 of benchmarks/workloads/README.md: one training step of the MLP 784-512-512-10 (ReLU) on a
# batch of 64 images 1x28x28 (flattened): forward, cross-entropy with integer labels,
# backward, SGD update with lr 0.01. f32; weights stored [in, out] (x @ w), initialised like
# PyTorch's nn.Linear (uniform +-1/sqrt(fan_in)).
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's inputs, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.
# `spora run benchmarks/workloads/w2_mlp_train.sp` prints the loss of one step.

model MLP() {
    param w1: f32[784, 512] = uniform(-0.03571, 0.03571)
    param b1: f32[512] = uniform(-0.03571, 0.03571)
    param w2: f32[512, 512] = uniform(-0.04419, 0.04419)
    param b2: f32[512] = uniform(-0.04419, 0.04419)
    param w3: f32[512, 10] = uniform(-0.04419, 0.04419)
    param b3: f32[10] = uniform(-0.04419, 0.04419)
    def forward(x) = relu(relu(flatten(x) @ w1 + b1) @ w2 + b2) @ w3 + b3
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

# One SGD step: returns the loss and the updated parameters.
def step(net: MLP, x, y) {
    let (l, g) = value_and_grad(loss)(net, x, y)
    return (l, tree_map(fn (p, d) => p - 0.01 * d, net, g))
}

def inputs() = (MLP(seed=0), normal(shape=(64, 1, 28, 28), seed=1),
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
