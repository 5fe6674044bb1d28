# Prints the largest absolute difference between the parameters of two checkpoints of
# w4_block_train.sp's model (a.ckpt and b.ckpt in the working directory).
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
}

def main() {
    let a = load("a.ckpt", EncoderBlock(seq=32, seed=0))
    let b = load("b.ckpt", EncoderBlock(seq=32, seed=0))
    let d = max([max(abs(a.wq - b.wq)), max(abs(a.bq - b.bq)), max(abs(a.wk - b.wk)),
                 max(abs(a.bk - b.bk)), max(abs(a.wv - b.wv)), max(abs(a.bv - b.bv)),
                 max(abs(a.wo - b.wo)), max(abs(a.bo - b.bo)), max(abs(a.w1 - b.w1)),
                 max(abs(a.b1 - b.b1)), max(abs(a.w2 - b.w2)), max(abs(a.b2 - b.b2)),
                 max(abs(a.g1 - b.g1)), max(abs(a.be1 - b.be1)), max(abs(a.g2 - b.g2)),
                 max(abs(a.be2 - b.be2))])
    print("maxdiff", d)
}
