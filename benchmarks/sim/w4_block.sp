# W4 of benchmarks/workloads/README.md as a training step for the parallel benchmarks: one
# Transformer encoder block (d_model 256, 4 heads, FFN 1024, post-LayerNorm, ReLU, every
# projection with a bias, weights stored [in, out]) on `batch` sequences of 128 tokens, the
# mean square of its output as the loss, one SGD step. `spora sim`, `spora run --strategy` and
# `spora search` set `batch`. The projections are separate tensors (wq, wk, wv, wo, w1, w2), so
# a Megatron split is a layout per weight: examples in benchmarks/sim/strategies/w4_*.json.
let batch = 8

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
    # (batch, 128, 256) -> (batch, 4 heads, 128, 64)
    def heads(t) = transpose(reshape(t, (batch, 128, 4, 64)), (0, 2, 1, 3))
    def forward(x) {
        let q = heads(x @ wq + bq)
        let k = heads(x @ wk + bk)
        let v = heads(x @ wv + bv)
        let att = softmax(q @ transpose(k, (0, 1, 3, 2)) * 0.125, axis=-1)
        let o = reshape(transpose(att @ v, (0, 2, 1, 3)), (batch, 128, 256)) @ wo + bo
        let h = layer_norm(x + o, g1, be1)
        return layer_norm(h + relu(h @ w1 + b1) @ w2 + b2, g2, be2)
    }
}

def loss(net: EncoderBlock, x) {
    let y = net(x)
    return mean(y * y)
}

def main() {
    var net = EncoderBlock(seed=0)
    let x = normal(shape=(batch, 128, 256), seed=1)
    let (l, g) = value_and_grad(loss)(net, x)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
