# `spora ir --stage kernels --entry step`: the kernel IR (semantics/kernel_ir/) of every fusion
# group of a step, and the C++ target's schedule. A softmax over rows is three passes over each
# row (max, the sum of exp, the output) with row accumulators; W5's chain on 4096 floats is one
# flat loop whose C++ form interleaves two halves and writes 16 lanes explicitly.
# RUN: ir --stage kernels --entry step
def step(x, y) = (softmax(x * 2.0, axis=1), gelu(y * 1.5 + 0.25) * 0.75 + tanh(y))

def main() {
    let (s, c) = step(normal(shape=(64, 100), seed=1), normal(shape=(4096,), seed=2))
    print(s[0, 0:2], c[0:4])
}
