# The GPT head of the auto-vs-Megatron study (papers/gpt_auto_vs_megatron.md): the final
# LayerNorm, the logits over the vocabulary (the output projection, tied to the embedding in
# GPT) and the cross-entropy against the next tokens, over `batch` sequences of `seq` tokens.
# The study driver sets `d`, and `batch` to the micro-batch.
let batch = 1
let seq = 2048
let d = 2304
let vocab = 51200

model GptHead() {
    param ln_w: f32[d] = ones()
    param ln_b: f32[d] = zeros()
    param wte: f32[d, vocab] = zeros()
    def forward(x) = reshape(layer_norm(x, ln_w, ln_b) @ wte, (batch * seq, vocab))
}

def loss(head: GptHead, x, y) = cross_entropy(head(x), y)

def main() {
    let head = GptHead(seed=0)
    let x = zeros(shape=(batch, seq, d))
    let y = cast(uniform(0.0, 51200.0, shape=(batch * seq,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(head, x, y)
    print("loss", l)
}
