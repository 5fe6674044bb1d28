# W4 (one Transformer encoder block: d_model 256, 4 heads, FFN 1024, post-LayerNorm) trained 4
# steps with std.optim's Adam on batches of 8 random sequences of 32 tokens: the program whose
# measured peak memory per rank (`spora run --stats`) memory_prediction_test.sh holds against
# `spora sim`'s prediction for the same strategy. `let batch` is what `spora sim` sets.
import std.optim

let batch = 8

model EncoderBlock(seq: int = 32) {
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
    # (4, seq, 256) -> (4, 4 heads, seq, 64)
    def heads(t) = transpose(reshape(t, (batch, seq, 4, 64)), (0, 2, 1, 3))
    def forward(x) {
        let q = heads(x @ wq + bq)
        let k = heads(x @ wk + bk)
        let v = heads(x @ wv + bv)
        let att = softmax(q @ transpose(k, (0, 1, 3, 2)) * 0.125, axis=-1)
        let o = reshape(transpose(att @ v, (0, 2, 1, 3)), (batch, seq, 256)) @ wo + bo
        let h = layer_norm(x + o, g1, be1)
        return layer_norm(h + relu(h @ w1 + b1) @ w2 + b2, g2, be2)
    }
}

def loss(net: EncoderBlock, x, y) = mean((net(x) - y) ** 2.0)

def main() {
    var net = EncoderBlock(seq=32, seed=0)
    let xs = normal(shape=(4 * batch, 32, 256), seed=1)
    let ys = normal(shape=(4 * batch, 32, 256), seed=2)
    let opt = adam(lr=0.001)
    var state = opt.init(net)
    for (x, y) in batches(xs, ys, batch=batch) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        (net, state) = opt.update(net, g, state)
        print("loss", l)
    }
    print("wq", sum(net.wq), "w1", sum(net.w1), "g1", sum(net.g1))
    save(net, "w4.ckpt")
}
