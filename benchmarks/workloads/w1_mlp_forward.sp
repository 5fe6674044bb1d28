# W1 of benchmarks/workloads/README.md: inference of the MLP 784-512-512-10 (ReLU, the MindSpore
# tutorial network) on a batch of 64 images 1x28x28, flattened. Forward only, f32; weights
# stored [in, out] (x @ w), initialised like PyTorch's nn.Linear (uniform +-1/sqrt(fan_in)).
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's inputs, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.

model MLP() {
    param w1: f32[784, 512] = uniform(-0.03571, 0.03571)
    param b1: f32[512] = uniform(-0.03571, 0.03571)
    param w2: f32[512, 512] = uniform(-0.04419, 0.04419)
    param b2: f32[512] = uniform(-0.04419, 0.04419)
    param w3: f32[512, 10] = uniform(-0.04419, 0.04419)
    param b3: f32[10] = uniform(-0.04419, 0.04419)
    def forward(x) = relu(relu(flatten(x) @ w1 + b1) @ w2 + b2) @ w3 + b3
}

# The logits of one batch.
def step(net: MLP, x) = net(x)

def inputs() = (MLP(seed=0), normal(shape=(64, 1, 28, 28), seed=1))

# k forward passes; eager mode unrolls the loop. After each step: print the sum of the logits if
# check, else the step index (eager mode's benchmark times the steps between these marks).
def run_steps(k, check) {
    let (net, x) = inputs()
    for i in range(k) {
        let logits = step(net, x)
        if check {
            print(sum(logits))
        } else {
            print(i)
        }
    }
}

def main() {
    let (net, x) = inputs()
    print(sum(step(net, x)))
    return (net, x)
}
