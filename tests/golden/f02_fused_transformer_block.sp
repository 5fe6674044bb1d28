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
# CHECK-NEXT: %45 = call @fused_step.7(%44, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %46 = tuple_get(%45, index=0) : f32[8,128,256]
# CHECK-NEXT: %47 = tuple_get(%45, index=1) : f32[8,128,256]
# CHECK-NEXT: %48 = call @fused_step.4(%46, %24, %25) : f32[8,128,1024]
# CHECK-NEXT: %49 = call @fused_step.5(%48, %26, %46, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %50 = tuple_get(%49, index=0) : f32
# CHECK-NEXT: %51 = tuple_get(%49, index=1) : f32[8,128,256]
# CHECK-NEXT: %52 = tuple_get(%49, index=2) : f32[8,128,256]
# CHECK-NEXT: %53 = tuple_get(%49, index=3) : f32[8,128,256]
# CHECK-NEXT: %54 = sum(%52, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %55 = reshape(%54, shape=[256]) : f32[256]
# CHECK-NEXT: %56 = sum(%51, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %57 = reshape(%56, shape=[256]) : f32[256]
# CHECK-NEXT: %58 = sum(%53, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %59 = reshape(%58, shape=[256]) : f32[256]
# CHECK-NEXT: %60 = reshape(%48, shape=[1024,1024]) : f32[1024,1024]
# CHECK-NEXT: %61 = reshape(%53, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %62 = matmul(%60, %61, transpose_a=true) : f32[1024,256]
# CHECK-NEXT: %63 = call @fused_step.6(%53, %26, %48) : f32[8,128,1024]
# CHECK-NEXT: %64 = sum(%63, axis=[0,1], keepdims=true) : f32[1,1,1024]
# CHECK-NEXT: %65 = reshape(%64, shape=[1024]) : f32[1024]
# CHECK-NEXT: %66 = reshape(%46, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %67 = reshape(%63, shape=[1024,1024]) : f32[1024,1024]
# CHECK-NEXT: %68 = matmul(%66, %67, transpose_a=true) : f32[256,1024]
# CHECK-NEXT: %69 = call @fused_step.8(%63, %24, %53, %47, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: %70 = tuple_get(%69, index=0) : f32[8,128,256]
# CHECK-NEXT: %71 = tuple_get(%69, index=1) : f32[8,128,256]
# CHECK-NEXT: %72 = tuple_get(%69, index=2) : f32[8,128,256]
# CHECK-NEXT: %73 = sum(%72, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %74 = reshape(%73, shape=[256]) : f32[256]
# CHECK-NEXT: %75 = sum(%70, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %76 = reshape(%75, shape=[256]) : f32[256]
# CHECK-NEXT: %77 = sum(%71, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %78 = reshape(%77, shape=[256]) : f32[256]
# CHECK-NEXT: %79 = reshape(%43, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %80 = reshape(%71, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %81 = matmul(%79, %80, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %82 = matmul(%71, %22, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %83 = reshape(%82, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %84 = permute(%83, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: %85 = call @fused_step.9(%84, %39, %41) : f32[8,4,128,128]
# CHECK-NEXT: %86 = matmul(%41, %84, transpose_a=true) : f32[8,4,128,64]
# CHECK-NEXT: %87 = matmul(%85, %40) : f32[8,4,128,64]
# CHECK-NEXT: %88 = matmul(%85, %34, transpose_a=true) : f32[8,4,128,64]
# CHECK-NEXT: %89 = permute(%86, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %90 = reshape(%89, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %91 = sum(%90, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %92 = reshape(%91, shape=[256]) : f32[256]
# CHECK-NEXT: %93 = reshape(%x, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %94 = reshape(%89, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %95 = matmul(%93, %94, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %96 = permute(%88, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %97 = reshape(%96, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %98 = sum(%97, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %99 = reshape(%98, shape=[256]) : f32[256]
# CHECK-NEXT: %100 = reshape(%96, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %101 = matmul(%93, %100, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %102 = matmul(%97, %18, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %103 = permute(%87, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %104 = reshape(%103, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %105 = sum(%104, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %106 = reshape(%105, shape=[256]) : f32[256]
# CHECK-NEXT: %107 = reshape(%103, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: %108 = matmul(%93, %107, transpose_a=true) : f32[256,256]
# CHECK-NEXT: %109 = matmul(%104, %16, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %110 = call @fused_step.10(%90, %20, %71, %102, %109) : f32[8,128,256]
# CHECK-NEXT: %111 = make_record(%108, %106, %101, %99, %95, %92, %81, %78, %68, %65, %62, %59, %74, %76, %55, %57, name="EncoderBlock", names="wq,bq,wk,bk,wv,bv,wo,bo,w1,b1,w2,b2,g1,be1,g2,be2") : EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}
# CHECK-NEXT: %112 = make_tuple(%111, %110) : (EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}, f32[8,128,256])
# CHECK-NEXT: %113 = make_tuple(%50, %112) : (f32, (EncoderBlock{wq: f32[256,256], bq: f32[256], wk: f32[256,256], bk: f32[256], wv: f32[256,256], bv: f32[256], wo: f32[256,256], bo: f32[256], w1: f32[256,1024], b1: f32[1024], w2: f32[1024,256], b2: f32[256], g1: f32[256], be1: f32[256], g2: f32[256], be2: f32[256]}, f32[8,128,256]))
# CHECK-NEXT: return %113
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %114 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %115 = add(%114, %p2) : f32[8,128,256]
# CHECK-NEXT: return %115
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %116 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %117 = add(%116, %p2) : f32[8,128,256]
# CHECK-NEXT: return %117
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %118 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %119 = add(%118, %p2) : f32[8,128,256]
# CHECK-NEXT: return %119
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64]) -> f32[8,4,128,128] {
# CHECK-NEXT: %120 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %121 = constant 0.125 : f32
# CHECK-NEXT: %122 = mul(%120, %121) : f32[8,4,128,128]
# CHECK-NEXT: %123 = softmax(%122, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %123
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %124 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %125 = add(%124, %p2) : f32[8,128,1024]
# CHECK-NEXT: %126 = relu(%125) : f32[8,128,1024]
# CHECK-NEXT: return %126
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %127 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %128 = add(%p2, %127) : f32[8,128,256]
# CHECK-NEXT: %129 = add(%128, %p3) : f32[8,128,256]
# CHECK-NEXT: %130 = layer_norm(%129, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %131 = sum(%130, axis=none, keepdims=false) : f32
# CHECK-NEXT: %132 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %133 = broadcast_to(%132, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %134 = mean(%129, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %135 = sub(%129, %134) : f32[8,128,256]
# CHECK-NEXT: %136 = mul(%135, %135) : f32[8,128,256]
# CHECK-NEXT: %137 = mean(%136, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %138 = constant 1e-05 : f32
# CHECK-NEXT: %139 = add(%137, %138) : f32[8,128,1]
# CHECK-NEXT: %140 = rsqrt(%139) : f32[8,128,1]
# CHECK-NEXT: %141 = mul(%135, %140) : f32[8,128,256]
# CHECK-NEXT: %142 = mul(%133, %p4) : f32[8,128,256]
# CHECK-NEXT: %143 = mean(%142, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %144 = sub(%142, %143) : f32[8,128,256]
# CHECK-NEXT: %145 = mul(%142, %141) : f32[8,128,256]
# CHECK-NEXT: %146 = mean(%145, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %147 = mul(%141, %146) : f32[8,128,256]
# CHECK-NEXT: %148 = sub(%144, %147) : f32[8,128,256]
# CHECK-NEXT: %149 = mul(%140, %148) : f32[8,128,256]
# CHECK-NEXT: %150 = make_tuple(%131, %133, %141, %149) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %150
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,256], %p1: f32[1024,256], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %151 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,1024]
# CHECK-NEXT: %152 = constant 0.0 : f32
# CHECK-NEXT: %153 = gt(%p2, %152) : bool[8,128,1024]
# CHECK-NEXT: %154 = where(%153, %151, %152) : f32[8,128,1024]
# CHECK-NEXT: return %154
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %155 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %156 = add(%155, %p2) : f32[8,128,256]
# CHECK-NEXT: %157 = add(%p3, %156) : f32[8,128,256]
# CHECK-NEXT: %158 = layer_norm(%157, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %159 = mean(%157, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %160 = sub(%157, %159) : f32[8,128,256]
# CHECK-NEXT: %161 = make_tuple(%158, %160) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %161
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[256,1024], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %162 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %163 = add(%p2, %162) : f32[8,128,256]
# CHECK-NEXT: %164 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %165 = mean(%164, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %166 = constant 1e-05 : f32
# CHECK-NEXT: %167 = add(%165, %166) : f32[8,128,1]
# CHECK-NEXT: %168 = rsqrt(%167) : f32[8,128,1]
# CHECK-NEXT: %169 = mul(%p3, %168) : f32[8,128,256]
# CHECK-NEXT: %170 = mul(%163, %p4) : f32[8,128,256]
# CHECK-NEXT: %171 = mean(%170, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %172 = sub(%170, %171) : f32[8,128,256]
# CHECK-NEXT: %173 = mul(%170, %169) : f32[8,128,256]
# CHECK-NEXT: %174 = mean(%173, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %175 = mul(%169, %174) : f32[8,128,256]
# CHECK-NEXT: %176 = sub(%172, %175) : f32[8,128,256]
# CHECK-NEXT: %177 = mul(%168, %176) : f32[8,128,256]
# CHECK-NEXT: %178 = mul(%163, %169) : f32[8,128,256]
# CHECK-NEXT: %179 = make_tuple(%163, %177, %178) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %179
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,128,64], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %180 = matmul(%p0, %p1, transpose_b=true) : f32[8,4,128,128]
# CHECK-NEXT: %181 = mul(%180, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %182 = sum(%181, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %183 = sub(%180, %182) : f32[8,4,128,128]
# CHECK-NEXT: %184 = mul(%p2, %183) : f32[8,4,128,128]
# CHECK-NEXT: %185 = constant 0.125 : f32
# CHECK-NEXT: %186 = mul(%184, %185) : f32[8,4,128,128]
# CHECK-NEXT: return %186
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %187 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %188 = add(%p2, %187) : f32[8,128,256]
# CHECK-NEXT: %189 = add(%188, %p3) : f32[8,128,256]
# CHECK-NEXT: %190 = add(%189, %p4) : f32[8,128,256]
# CHECK-NEXT: return %190
# CHECK-NEXT: }
