# A 48-layer Transformer encoder (GPT-2-medium widths: d_model 1024, 16 heads, FFN 4096; post-
# LayerNorm, ReLU, no dropout) over sequences of 1024 embedded tokens, with a 32000-way
# classification head per token and cross-entropy: 616 M parameters (2.5 GB in f32). The model
# of the simulator's performance benchmark (benchmarks/sim/sim_scaling.sh): `spora sim` sets
# `batch` to the per-rank batch.
import std.nn

let batch = 1
let seq = 1024
let d = 1024

model Layers2() {
    param a = TransformerEncoderBlock(d, 16, 4096, 0.0)
    param b = TransformerEncoderBlock(d, 16, 4096, 0.0)
    def forward(x) = b(a(x))
}
model Layers8() {
    param a = Layers2()
    param b = Layers2()
    param c = Layers2()
    param e = Layers2()
    def forward(x) = e(c(b(a(x))))
}
model Transformer48() {
    param a = Layers8()
    param b = Layers8()
    param c = Layers8()
    param e = Layers8()
    param f = Layers8()
    param g = Layers8()
    param head = Dense(d, 32000)
    def forward(x) = head(g(f(e(c(b(a(x)))))))
}

def loss(net: Transformer48, x, y) = cross_entropy(reshape(net(x), (batch * seq, 32000)), y)

def main() {
    let net = Transformer48(seed=0)
    let x = normal(shape=(batch, seq, d), seed=1)
    let y = cast(uniform(0.0, 32000.0, shape=(batch * seq,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    print("loss", l)
}
