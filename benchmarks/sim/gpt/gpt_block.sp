# One GPT decoder block (GPT-2 / Megatron-LM: pre-LayerNorm, causal multi-head self-attention,
# a GELU MLP of 4 d, residual connections) over `batch` sequences of `seq` tokens: the layer of
# the auto-vs-Megatron study (papers/gpt_auto_vs_megatron.md). Written in f32 (layer_norm and
# the initialisers take f32 only); the study runs the matmuls at the f16 peak and halves every
# op's bytes, as mixed precision would. The study driver sets `d` and `heads` per model size and
# `batch` to the micro-batch; the loss is the mean of the block's output, so the backward pass
# is the block's own (a stand-in for the cotangent that comes from the next layer). Separate
# query, key and value projections (Megatron packs them in one matrix, split by heads: the same
# shards).
let batch = 1
let seq = 2048
let d = 2304
let heads = 24

model GptBlock() {
    param ln1_w: f32[d] = ones()
    param ln1_b: f32[d] = zeros()
    param wq: f32[d, d] = zeros()
    param bq: f32[d] = zeros()
    param wk: f32[d, d] = zeros()
    param bk: f32[d] = zeros()
    param wv: f32[d, d] = zeros()
    param bv: f32[d] = zeros()
    param wo: f32[d, d] = zeros()
    param bo: f32[d] = zeros()
    param ln2_w: f32[d] = ones()
    param ln2_b: f32[d] = zeros()
    param w1: f32[d, 4 * d] = zeros()
    param b1: f32[4 * d] = zeros()
    param w2: f32[4 * d, d] = zeros()
    param b2: f32[d] = zeros()
    def heads_of(t) = permute(reshape(t, (batch, seq, heads, d // heads)), (0, 2, 1, 3))
    def forward(x, mask) {
        let h = layer_norm(x, ln1_w, ln1_b)
        let q = heads_of(h @ wq + bq)
        let k = heads_of(h @ wk + bk)
        let v = heads_of(h @ wv + bv)
        let scores = where(mask, -10000.0, (q @ permute(k, (0, 1, 3, 2))) * ((d // heads) ** -0.5))
        let a = softmax(scores, axis=-1) @ v
        let y = x + reshape(permute(a, (0, 2, 1, 3)), (batch, seq, d)) @ wo + bo
        let z = layer_norm(y, ln2_w, ln2_b)
        return y + gelu(z @ w1 + b1) @ w2 + b2
    }
}

def loss(blk: GptBlock, x, mask) = mean(blk(x, mask))

def main() {
    let blk = GptBlock(seed=0)
    let x = zeros(shape=(batch, seq, d))
    let pos = arange(seq, dtype=i32)
    let mask = reshape(pos, (seq, 1)) < reshape(pos, (1, seq))
    let (l, g) = value_and_grad(loss)(blk, x, mask)
    print("loss", l)
}
