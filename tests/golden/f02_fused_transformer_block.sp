# the fusion groups of one Transformer encoder block's forward and backward (W4 of
# benchmarks/workloads/README.md: d_model 256, 4 heads, FFN 1024, post-LayerNorm, batch 8 x 128)
# Pinned: the groups of the forward (GEMM epilogues, the scaled softmax over q heads(k)^T with
# heads(k) read through transpose_b, add + layer_norm) and of the backward (layer_norm gradients
# as multi-pass row kernels, masks with bias gradients).
# RUN: ir --stage fused
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
    param g1: f32[256] = ones()
    param be1: f32[256] = zeros()
    param g2: f32[256] = ones()
    param be2: f32[256] = zeros()
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

@noinline
def step(blk: EncoderBlock, x: f32[8, 128, 256]) = value_and_grad(loss, wrt=(0, 1))(blk, x)

def main() {
    let (l, g) = step(EncoderBlock(seed=0), normal(shape=(8, 128, 256), seed=1))
    print(l)
}
# CHECK: %32 = call @fused_step(%x, %16, %17) : f32[8,128,256]
# CHECK: %35 = call @fused_step.1(%x, %18, %19) : f32[8,128,256]
# CHECK: %37 = call @fused_step.2(%x, %20, %21) : f32[8,128,256]
# CHECK: %41 = call @fused_step.3(%34, %40) : f32[8,4,128,128]
# CHECK: %45 = call @fused_step.7(%44, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK: %48 = call @fused_step.4(%46, %24, %25) : (f32[8,128,1024], f32[8,128,1024])
# CHECK: %51 = call @fused_step.5(%50, %26, %46, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %65 = call @fused_step.6(%55, %26, %49) : f32[8,128,1024]
# CHECK: %71 = call @fused_step.8(%65, %24, %55, %47, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %87 = call @fused_step.9(%86, %39, %41) : f32[8,4,128,128]
# CHECK: %112 = call @fused_step.10(%92, %20, %73, %104, %111) : f32[8,128,256]
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %116 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %117 = add(%116, %p2) : f32[8,128,256]
# CHECK-NEXT: return %117
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %118 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %119 = add(%118, %p2) : f32[8,128,256]
# CHECK-NEXT: return %119
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %120 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %121 = add(%120, %p2) : f32[8,128,256]
# CHECK-NEXT: return %121
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64]) -> f32[8,4,128,128] {
# CHECK-NEXT: %122 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %123 = constant 0.125 : f32
# CHECK-NEXT: %124 = mul(%122, %123) : f32[8,4,128,128]
# CHECK-NEXT: %125 = softmax(%124, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %125
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %126 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %127 = add(%126, %p2) : f32[8,128,1024]
# CHECK-NEXT: %128 = relu(%127) : f32[8,128,1024]
# CHECK-NEXT: %129 = make_tuple(%127, %128) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %129
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %130 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %131 = add(%p2, %130) : f32[8,128,256]
# CHECK-NEXT: %132 = add(%131, %p3) : f32[8,128,256]
# CHECK-NEXT: %133 = layer_norm(%132, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %134 = sum(%133, axis=none, keepdims=false) : f32
# CHECK-NEXT: %135 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %136 = broadcast_to(%135, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %137 = mean(%132, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %138 = sub(%132, %137) : f32[8,128,256]
# CHECK-NEXT: %139 = mul(%138, %138) : f32[8,128,256]
# CHECK-NEXT: %140 = mean(%139, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %141 = constant 1e-05 : f32
# CHECK-NEXT: %142 = add(%140, %141) : f32[8,128,1]
# CHECK-NEXT: %143 = rsqrt(%142) : f32[8,128,1]
# CHECK-NEXT: %144 = mul(%138, %143) : f32[8,128,256]
# CHECK-NEXT: %145 = mul(%136, %p4) : f32[8,128,256]
# CHECK-NEXT: %146 = mean(%145, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %147 = sub(%145, %146) : f32[8,128,256]
# CHECK-NEXT: %148 = mul(%145, %144) : f32[8,128,256]
# CHECK-NEXT: %149 = mean(%148, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %150 = mul(%144, %149) : f32[8,128,256]
# CHECK-NEXT: %151 = sub(%147, %150) : f32[8,128,256]
# CHECK-NEXT: %152 = mul(%143, %151) : f32[8,128,256]
# CHECK-NEXT: %153 = make_tuple(%134, %136, %144, %152) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %153
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,256], %p1: f32[1024,256], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %154 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,1024]
# CHECK-NEXT: %155 = constant 0.0 : f32
# CHECK-NEXT: %156 = gt(%p2, %155) : bool[8,128,1024]
# CHECK-NEXT: %157 = where(%156, %154, %155) : f32[8,128,1024]
# CHECK-NEXT: return %157
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %158 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %159 = add(%158, %p2) : f32[8,128,256]
# CHECK-NEXT: %160 = add(%p3, %159) : f32[8,128,256]
# CHECK-NEXT: %161 = layer_norm(%160, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %162 = mean(%160, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %163 = sub(%160, %162) : f32[8,128,256]
# CHECK-NEXT: %164 = make_tuple(%161, %163) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %164
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[256,1024], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %165 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %166 = add(%p2, %165) : f32[8,128,256]
# CHECK-NEXT: %167 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %168 = mean(%167, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %169 = constant 1e-05 : f32
# CHECK-NEXT: %170 = add(%168, %169) : f32[8,128,1]
# CHECK-NEXT: %171 = rsqrt(%170) : f32[8,128,1]
# CHECK-NEXT: %172 = mul(%p3, %171) : f32[8,128,256]
# CHECK-NEXT: %173 = mul(%166, %p4) : f32[8,128,256]
# CHECK-NEXT: %174 = mean(%173, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %175 = sub(%173, %174) : f32[8,128,256]
# CHECK-NEXT: %176 = mul(%173, %172) : f32[8,128,256]
# CHECK-NEXT: %177 = mean(%176, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %178 = mul(%172, %177) : f32[8,128,256]
# CHECK-NEXT: %179 = sub(%175, %178) : f32[8,128,256]
# CHECK-NEXT: %180 = mul(%171, %179) : f32[8,128,256]
# CHECK-NEXT: %181 = mul(%166, %172) : f32[8,128,256]
# CHECK-NEXT: %182 = make_tuple(%166, %180, %181) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %182
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %183 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %184 = mul(%183, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %185 = sum(%184, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %186 = sub(%183, %185) : f32[8,4,128,128]
# CHECK-NEXT: %187 = mul(%p2, %186) : f32[8,4,128,128]
# CHECK-NEXT: %188 = constant 0.125 : f32
# CHECK-NEXT: %189 = mul(%187, %188) : f32[8,4,128,128]
# CHECK-NEXT: return %189
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %190 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %191 = add(%p2, %190) : f32[8,128,256]
# CHECK-NEXT: %192 = add(%191, %p3) : f32[8,128,256]
# CHECK-NEXT: %193 = add(%192, %p4) : f32[8,128,256]
# CHECK-NEXT: return %193
# CHECK-NEXT: }
