# W5 of benchmarks/workloads/README.md: the elementwise chain
#     y = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x)      (exact erf GELU)
# on 4M = 4 * 1024 * 1024 f32 values; forward only. The fusion test: 5 elementwise
# operations over 16 MB, whose machine limit is 32 MB moved at triad bandwidth.
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's input, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.

def step(x) = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x)

def inputs() = (normal(shape=(4194304,), seed=1),)

# k evaluations; eager mode unrolls the loop. After each step: print x and y at 4 places if
# check, else the step index (eager mode's benchmark times the steps between these marks).
def run_steps(k, check) {
    let (x,) = inputs()
    for i in range(k) {
        let y = step(x)
        if check {
            print(x[0:4], y[0:4])
        } else {
            print(i)
        }
    }
}

def main() {
    let (x,) = inputs()
    let y = step(x)
    print(x[0:4], y[0:4])
    return (x,)
}
