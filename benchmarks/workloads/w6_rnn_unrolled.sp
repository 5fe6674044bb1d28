# W6 of benchmarks/workloads/README.md: an RNN cell (PyTorch's nn.RNNCell(256, 256), tanh)
#     h = tanh(x_t @ w_ih + b_ih + h @ w_hh + b_hh)
# hidden 256, batch 32, run over 50 time steps from h = 0; forward and backward of sum(h_50)
# with respect to the cell's parameters. The loop-AD test: in graph mode the time loop stays a
# loop (for_range) that reverse mode differentiates with a tape; eager mode unrolls it.
# f32; weights stored [in, out], initialised like PyTorch's (uniform +-1/sqrt(hidden)).
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's inputs, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.

model RNNCell() {
    param w_ih: f32[256, 256] = uniform(-0.0625, 0.0625)
    param w_hh: f32[256, 256] = uniform(-0.0625, 0.0625)
    param b_ih: f32[256] = uniform(-0.0625, 0.0625)
    param b_hh: f32[256] = uniform(-0.0625, 0.0625)
    def forward(x, h) = tanh(x @ w_ih + b_ih + h @ w_hh + b_hh)
}

# sum(h_50) over the sequence xs: f32[50, 32, 256].
def unroll(cell: RNNCell, xs, h0) {
    var h = h0
    for t in range(50) {
        h = cell(xs[t], h)
    }
    return sum(h)
}

# sum(h_50) and its gradient with respect to the cell (an RNNCell record).
def step(cell: RNNCell, xs, h0) = value_and_grad(unroll)(cell, xs, h0)

def inputs() = (RNNCell(seed=0), normal(shape=(50, 32, 256), seed=1), zeros(shape=(32, 256)))

# k steps; eager mode unrolls both loops. After each step: print each sum(h_50) if
# check, else the step index (eager mode's benchmark times the steps between these marks).
def run_steps(k, check) {
    let (cell, xs, h0) = inputs()
    for i in range(k) {
        let (l, g) = step(cell, xs, h0)
        if check {
            print(l)
        } else {
            print(i)
        }
    }
}

def main() {
    let (cell, xs, h0) = inputs()
    let (l, g) = step(cell, xs, h0)
    print(l)
    return (cell, xs, h0)
}
