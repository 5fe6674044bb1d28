# W4 of benchmarks/workloads/README.md: one Transformer encoder block (PyTorch's
# nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0,
# activation=relu, norm_first=False, batch_first=True)) on an input 8x128x256:
#     h = layer_norm(x + attention(x)),  out = layer_norm(h + ffn(h))
# forward and backward of sum(out) with respect to every parameter and the input. f32; every
# projection has a bias, both layer norms an affine scale and shift; weights stored [in, out].
# The layer norms' scales are random, not PyTorch's ones: with a scale of ones, sum(out) does
# not depend on anything before the last layer norm, and every other gradient is rounding
# noise, which would make the benchmark's correctness check meaningless (the work is the same).
#
# The benchmark (benchmarks/bench_workloads.cpp) runs main once to get step's inputs, then
# times calls of the graph @step (graph mode), or lowers `run_steps(n, false)` in eager mode.

model EncoderBlock() {
    param wq: f32[256, 256] = uniform(-0.07654, 0.07654)
    param bq: f32[256] = zeros()
    param wk: f32[256, 256] = uniform(-0.07654, 0.07654)
    param bk: f32[256] = zeros()
    param wv: f32[256, 256] = uniform(-0.07654, 0.07654)
    param bv: f32[256] = zeros()
    param wo: f32[256, 256] = uniform(-0.0625, 0.0625)
    param bo: f32[256] = zeros()
    param w1: f32[256, 1024] = uniform(-0.0625, 0.0625)
    param b1: f32[1024] = uniform(-0.0625, 0.0625)
    param w2: f32[1024, 256] = uniform(-0.03125, 0.03125)
    param b2: f32[256] = uniform(-0.03125, 0.03125)
    param g1: f32[256] = uniform(0.5, 1.5)
    param be1: f32[256] = uniform(-0.1, 0.1)
    param g2: f32[256] = uniform(0.5, 1.5)
    param be2: f32[256] = uniform(-0.1, 0.1)
    # (8, 128, 256) -> (8, 4 heads, 128, 64)
    def heads(t) = transpose(reshape(t, (8, 128, 4, 64)), (0, 2, 1, 3))
    def forward(x) {
        let q = heads(x @ wq + bq)
        let k = heads(x @ wk + bk)
        let v = heads(x @ wv + bv)
        let att = softmax(q @ transpose(k, (0, 1, 3, 2)) * 0.125, axis=-1)
        let o = reshape(transpose(att @ v, (0, 2, 1, 3)), (8, 128, 256)) @ wo + bo
        let h = layer_norm(x + o, g1, be1)
        return layer_norm(h + relu(h @ w1 + b1) @ w2 + b2, g2, be2)
    }
}

def loss(blk: EncoderBlock, x) = sum(blk(x))

# sum(out) and its gradient: (d/d params as an EncoderBlock record, d/d x).
def step(blk: EncoderBlock, x) = value_and_grad(loss, wrt=(0, 1))(blk, x)

def inputs() = (EncoderBlock(seed=0), normal(shape=(8, 128, 256), seed=1))

# k steps; eager mode unrolls the loop. After each step: print each sum(out) if
# check, else the step index (eager mode's benchmark times the steps between these marks).
def run_steps(k, check) {
    let (blk, x) = inputs()
    for i in range(k) {
        let (l, g) = step(blk, x)
        if check {
            print(l)
        } else {
            print(i)
        }
    }
}

def main() {
    let (blk, x) = inputs()
    let (l, g) = step(blk, x)
    print(l)
    return (blk, x)
}
