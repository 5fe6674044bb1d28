# the fusion groups of one Transformer encoder block's forward and backward (W4 of
# benchmarks/workloads/README.md: d_model 256, 4 heads, FFN 1024, post-LayerNorm, batch 8 x 128)
# Pinned: the groups of the forward (GEMM epilogues, the scaled softmax over q heads(k)^T with
# heads(k) read through transpose_b, add + layer_norm) and of the backward (layer_norm_grad and
# the unscaled layer_norm for gamma's gradient in the products' epilogues, masks with bias
# gradients).
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
# CHECK-NEXT: %33 = reshape(%32, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %34 = transpose(%33, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: %35 = call @fused_step.1(%x, %18, %19) : f32[8,128,256]
# CHECK-NEXT: %36 = reshape(%35, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %37 = call @fused_step.2(%x, %20, %21) : f32[8,128,256]
# CHECK-NEXT: %38 = reshape(%37, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %39 = transpose(%38, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: %40 = permute(%36, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: %41 = call @fused_step.3(%34, %40) : f32[8,4,128,128]
# CHECK-NEXT: %42 = matmul(%41, %39) : f32[8,4,128,64]
# CHECK-NEXT: %43 = transpose(%42, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %44 = reshape(%43, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %45 = call @fused_step.4(%44, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %46 = tuple_get(%45, index=0) : f32[8,128,256]
# CHECK-NEXT: %47 = tuple_get(%45, index=1) : f32[8,128,256]
# CHECK-NEXT: %48 = call @fused_step.5(%47, %24, %25) : f32[8,128,1024]
# CHECK-NEXT: %49 = call @fused_step.6(%48, %26, %47, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %50 = tuple_get(%49, index=0) : f32
# CHECK-NEXT: %51 = tuple_get(%49, index=1) : f32[8,128,256]
# CHECK-NEXT: %52 = tuple_get(%49, index=2) : f32[8,128,256]
# CHECK-NEXT: %53 = sum(%52, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %54 = reshape(%53, shape=[256]) : f32[256]
# CHECK-NEXT: %55 = constant [1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0] : f32[256]
# CHECK-NEXT: %56 = sum(%51, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %57 = reshape(%56, shape=[256]) : f32[256]
# CHECK-NEXT: %58 = reshape(%48, shape=[1024,1024]) : f32[1024,1024]
# CHECK-NEXT: %59 = reshape(%51, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %60 = matmul(%58, %59, transpose_a=true) : f32[1024,256]
# CHECK-NEXT: %61 = call @fused_step.7(%51, %26, %48) : f32[8,128,1024]
# CHECK-NEXT: %62 = sum(%61, axis=[0,1], keepdims=true) : f32[1,1,1024]
# CHECK-NEXT: %63 = reshape(%62, shape=[1024]) : f32[1024]
# CHECK-NEXT: %64 = reshape(%47, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %65 = reshape(%61, shape=[1024,1024]) : f32[1024,1024]
# CHECK-NEXT: %66 = matmul(%64, %65, transpose_a=true) : f32[256,1024]
# CHECK-NEXT: %67 = call @fused_step.8(%61, %24, %51, %28, %46) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %68 = tuple_get(%67, index=0) : f32[8,128,256]
# CHECK-NEXT: %69 = tuple_get(%67, index=1) : f32[8,128,256]
# CHECK-NEXT: %70 = tuple_get(%67, index=2) : f32[8,128,256]
# CHECK-NEXT: %71 = sum(%70, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %72 = reshape(%71, shape=[256]) : f32[256]
# CHECK-NEXT: %73 = sum(%68, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %74 = reshape(%73, shape=[256]) : f32[256]
# CHECK-NEXT: %75 = sum(%69, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %76 = reshape(%75, shape=[256]) : f32[256]
# CHECK-NEXT: %77 = reshape(%43, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %78 = reshape(%69, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %79 = matmul(%77, %78, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %80 = matmul(%69, %22, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %81 = reshape(%80, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %82 = permute(%81, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: %83 = call @fused_step.9(%82, %39, %41) : f32[8,4,128,128]
# CHECK-NEXT: %84 = matmul(%41, %82, transpose_a=true) : f32[8,4,128,64]
# CHECK-NEXT: %85 = matmul(%83, %40) : f32[8,4,128,64]
# CHECK-NEXT: %86 = matmul(%83, %34, transpose_a=true) : f32[8,4,128,64]
# CHECK-NEXT: %87 = permute(%84, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %88 = reshape(%87, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %89 = sum(%88, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %90 = reshape(%89, shape=[256]) : f32[256]
# CHECK-NEXT: %91 = reshape(%x, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %92 = reshape(%87, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %93 = matmul(%91, %92, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %94 = permute(%86, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %95 = reshape(%94, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %96 = sum(%95, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %97 = reshape(%96, shape=[256]) : f32[256]
# CHECK-NEXT: %98 = reshape(%94, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %99 = matmul(%91, %98, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %100 = matmul(%95, %18, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %101 = permute(%85, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %102 = reshape(%101, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %103 = sum(%102, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %104 = reshape(%103, shape=[256]) : f32[256]
# CHECK-NEXT: %105 = reshape(%101, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %106 = matmul(%91, %105, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %107 = matmul(%102, %16, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %108 = call @fused_step.10(%88, %20, %69, %100, %107) : f32[8,128,256]
# CHECK-NEXT: %109 = make_record(%106, %104, %99, %97, %93, %90, %79, %76, %66, %63, %60, %57, %72, %74, %54, %55, name="EncoderBlock", names="wq,bq,wk,bk,wv,bv,wo,bo,w1,b1,w2,b2,g1,be1,g2,be2") : EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}
# CHECK-NEXT: %110 = make_tuple(%109, %108) : (EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}, f32[8,128,256])
# CHECK-NEXT: %111 = make_tuple(%50, %110) : (f32, (EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}, f32[8,128,256]))
# CHECK-NEXT: return %111
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %112 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %113 = add(%112, %p2) : f32[8,128,256]
# CHECK-NEXT: return %113
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %114 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %115 = add(%114, %p2) : f32[8,128,256]
# CHECK-NEXT: return %115
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %116 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %117 = add(%116, %p2) : f32[8,128,256]
# CHECK-NEXT: return %117
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64]) -> f32[8,4,128,128] {
# CHECK-NEXT: %118 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %119 = constant 0.125 : f32
# CHECK-NEXT: %120 = mul(%118, %119) : f32[8,4,128,128]
# CHECK-NEXT: %121 = softmax(%120, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %121
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %122 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %123 = add(%122, %p2) : f32[8,128,256]
# CHECK-NEXT: %124 = add(%p3, %123) : f32[8,128,256]
# CHECK-NEXT: %125 = layer_norm(%124, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %126 = make_tuple(%124, %125) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %126
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %127 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %128 = add(%127, %p2) : f32[8,128,1024]
# CHECK-NEXT: %129 = relu(%128) : f32[8,128,1024]
# CHECK-NEXT: return %129
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %130 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %131 = add(%p2, %130) : f32[8,128,256]
# CHECK-NEXT: %132 = add(%131, %p3) : f32[8,128,256]
# CHECK-NEXT: %133 = layer_norm(%132, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %134 = sum(%133, axis=none, keepdims=false) : f32
# CHECK-NEXT: %135 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %136 = broadcast_to(%135, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %137 = mul(%136, %p4) : f32[8,128,256]
# CHECK-NEXT: %138 = layer_norm_grad(%132, %137, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %139 = layer_norm(%132, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %140 = make_tuple(%134, %138, %139) : (f32, f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %140
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[1024,256], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %141 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,1024]
# CHECK-NEXT: %142 = constant 0.0 : f32
# CHECK-NEXT: %143 = gt(%p2, %142) : bool[8,128,1024]
# CHECK-NEXT: %144 = where(%143, %141, %142) : f32[8,128,1024]
# CHECK-NEXT: return %144
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[256,1024], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[8,128,256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %145 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %146 = add(%p2, %145) : f32[8,128,256]
# CHECK-NEXT: %147 = mul(%146, %p3) : f32[8,128,256]
# CHECK-NEXT: %148 = layer_norm_grad(%p4, %147, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %149 = layer_norm(%p4, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %150 = mul(%146, %149) : f32[8,128,256]
# CHECK-NEXT: %151 = make_tuple(%146, %148, %150) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %151
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %152 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %153 = mul(%152, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %154 = sum(%153, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %155 = sub(%152, %154) : f32[8,4,128,128]
# CHECK-NEXT: %156 = mul(%p2, %155) : f32[8,4,128,128]
# CHECK-NEXT: %157 = constant 0.125 : f32
# CHECK-NEXT: %158 = mul(%156, %157) : f32[8,4,128,128]
# CHECK-NEXT: return %158
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %159 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %160 = add(%p2, %159) : f32[8,128,256]
# CHECK-NEXT: %161 = add(%160, %p3) : f32[8,128,256]
# CHECK-NEXT: %162 = add(%161, %p4) : f32[8,128,256]
# CHECK-NEXT: return %162
# CHECK-NEXT: }
