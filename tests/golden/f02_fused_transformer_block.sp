# the fusion groups of one Transformer encoder block's forward and backward (W4 of
# shared/bench/WORKLOADS.md: d_model 256, 4 heads, FFN 1024, post-LayerNorm, batch 8 x 128)
# Pinned: the groups of the forward (GEMM epilogues, the scaled softmax, add + layer_norm) and
# of the backward (layer_norm gradients as multi-pass row kernels, masks with bias gradients).
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
# CHECK: %43 = call @fused_step.4(%42) : f32[8,128,256]
# CHECK: %44 = call @fused_step.12(%43, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK: %47 = call @fused_step.5(%45, %24, %25) : (f32[8,128,1024], f32[8,128,1024])
# CHECK: %50 = call @fused_step.6(%49, %26, %45, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %55 = call @fused_step.7(%53) : f32[256]
# CHECK: %56 = call @fused_step.8(%52) : f32[256]
# CHECK: %58 = call @fused_step.10(%54, %57, %48) : (f32[8,128,1024], f32[1024])
# CHECK: %62 = call @fused_step.9(%61, %54) : f32[1024,256]
# CHECK: %64 = call @fused_step.15(%54, %59, %63, %28) : (f32[256], f32[8,128,256], f32[8,128,256], f32[256])
# CHECK: %70 = call @fused_step.11(%69, %59) : f32[256,1024]
# CHECK: %71 = call @fused_step.13(%46, %67) : (f32[8,128,256], f32[8,128,256])
# CHECK: %74 = call @fused_step.14(%66, %72) : f32[256]
# CHECK: %76 = call @fused_step.16(%73, %75) : (f32[256], f32[8,128,256])
# CHECK: %80 = call @fused_step.17(%79, %73) : f32[256,256]
# CHECK: %81 = call @fused_step.18(%78) : f32[8,4,128,64]
# CHECK: %83 = call @fused_step.19(%81, %82, %41) : f32[8,4,128,128]
# CHECK: %90 = call @fused_step.20(%85) : f32[8,128,256]
# CHECK: %93 = call @fused_step.21(%92, %90) : f32[256,256]
# CHECK: %94 = call @fused_step.22(%89) : f32[8,128,256]
# CHECK: %96 = call @fused_step.23(%94, %95) : (f32[256], f32[8,128,256])
# CHECK: %99 = call @fused_step.24(%92, %94) : f32[256,256]
# CHECK: %100 = call @fused_step.25(%87) : f32[8,128,256]
# CHECK: %102 = call @fused_step.26(%100, %101) : (f32[256], f32[8,128,256])
# CHECK: %105 = call @fused_step.28(%90, %91, %73, %98, %104) : (f32[256], f32[8,128,256])
# CHECK: %108 = call @fused_step.27(%92, %100) : f32[256,256]
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
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %118 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %119 = constant 0.125 : f32
# CHECK-NEXT: %120 = mul(%118, %119) : f32[8,4,128,128]
# CHECK-NEXT: %121 = softmax(%120, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %121
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %122 = transpose(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %123 = reshape(%122, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %123
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %124 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %125 = add(%124, %p2) : f32[8,128,1024]
# CHECK-NEXT: %126 = relu(%125) : f32[8,128,1024]
# CHECK-NEXT: %127 = make_tuple(%125, %126) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %127
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %128 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %129 = add(%p2, %128) : f32[8,128,256]
# CHECK-NEXT: %130 = add(%129, %p3) : f32[8,128,256]
# CHECK-NEXT: %131 = layer_norm(%130, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %132 = sum(%131, axis=none, keepdims=false) : f32
# CHECK-NEXT: %133 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %134 = broadcast_to(%133, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %135 = mean(%130, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %136 = sub(%130, %135) : f32[8,128,256]
# CHECK-NEXT: %137 = mul(%136, %136) : f32[8,128,256]
# CHECK-NEXT: %138 = mean(%137, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %139 = constant 1e-05 : f32
# CHECK-NEXT: %140 = add(%138, %139) : f32[8,128,1]
# CHECK-NEXT: %141 = rsqrt(%140) : f32[8,128,1]
# CHECK-NEXT: %142 = mul(%136, %141) : f32[8,128,256]
# CHECK-NEXT: %143 = mul(%134, %p4) : f32[8,128,256]
# CHECK-NEXT: %144 = mean(%143, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %145 = sub(%143, %144) : f32[8,128,256]
# CHECK-NEXT: %146 = mul(%143, %142) : f32[8,128,256]
# CHECK-NEXT: %147 = mean(%146, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %148 = mul(%142, %147) : f32[8,128,256]
# CHECK-NEXT: %149 = sub(%145, %148) : f32[8,128,256]
# CHECK-NEXT: %150 = mul(%141, %149) : f32[8,128,256]
# CHECK-NEXT: %151 = make_tuple(%132, %134, %142, %150) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %151
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256]) -> f32[256] {
# CHECK-NEXT: %152 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %153 = reshape(%152, shape=[256]) : f32[256]
# CHECK-NEXT: return %153
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,256]) -> f32[256] {
# CHECK-NEXT: %154 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %155 = reshape(%154, shape=[256]) : f32[256]
# CHECK-NEXT: return %155
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,1024,128], %p1: f32[8,128,256]) -> f32[1024,256] {
# CHECK-NEXT: %156 = matmul(%p0, %p1) : f32[8,1024,256]
# CHECK-NEXT: %157 = sum(%156, axis=[0], keepdims=true) : f32[1,1024,256]
# CHECK-NEXT: %158 = reshape(%157, shape=[1024,256]) : f32[1024,256]
# CHECK-NEXT: return %158
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[8,128,1024]) -> (f32[8,128,1024], f32[1024]) {
# CHECK-NEXT: %159 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %160 = constant 0.0 : f32
# CHECK-NEXT: %161 = gt(%p2, %160) : bool[8,128,1024]
# CHECK-NEXT: %162 = where(%161, %159, %160) : f32[8,128,1024]
# CHECK-NEXT: %163 = sum(%162, axis=[0,1], keepdims=true) : f32[1,1,1024]
# CHECK-NEXT: %164 = reshape(%163, shape=[1024]) : f32[1024]
# CHECK-NEXT: %165 = make_tuple(%162, %164) : (f32[8,128,1024], f32[1024])
# CHECK-NEXT: return %165
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.11(%p0: f32[8,256,128], %p1: f32[8,128,1024]) -> f32[256,1024] {
# CHECK-NEXT: %166 = matmul(%p0, %p1) : f32[8,256,1024]
# CHECK-NEXT: %167 = sum(%166, axis=[0], keepdims=true) : f32[1,256,1024]
# CHECK-NEXT: %168 = reshape(%167, shape=[256,1024]) : f32[256,1024]
# CHECK-NEXT: return %168
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.12(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %169 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %170 = add(%169, %p2) : f32[8,128,256]
# CHECK-NEXT: %171 = add(%p3, %170) : f32[8,128,256]
# CHECK-NEXT: %172 = layer_norm(%171, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %173 = mean(%171, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %174 = sub(%171, %173) : f32[8,128,256]
# CHECK-NEXT: %175 = make_tuple(%172, %174) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %175
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.13(%p0: f32[8,128,256], %p1: f32[8,128,256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %176 = mul(%p0, %p0) : f32[8,128,256]
# CHECK-NEXT: %177 = mean(%176, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %178 = constant 1e-05 : f32
# CHECK-NEXT: %179 = add(%177, %178) : f32[8,128,1]
# CHECK-NEXT: %180 = rsqrt(%179) : f32[8,128,1]
# CHECK-NEXT: %181 = mul(%p0, %180) : f32[8,128,256]
# CHECK-NEXT: %182 = mean(%p1, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %183 = sub(%p1, %182) : f32[8,128,256]
# CHECK-NEXT: %184 = mul(%p1, %181) : f32[8,128,256]
# CHECK-NEXT: %185 = mean(%184, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %186 = mul(%181, %185) : f32[8,128,256]
# CHECK-NEXT: %187 = sub(%183, %186) : f32[8,128,256]
# CHECK-NEXT: %188 = mul(%180, %187) : f32[8,128,256]
# CHECK-NEXT: %189 = make_tuple(%181, %188) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %189
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.14(%p0: f32[8,128,256], %p1: f32[8,128,256]) -> f32[256] {
# CHECK-NEXT: %190 = mul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %191 = sum(%190, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %192 = reshape(%191, shape=[256]) : f32[256]
# CHECK-NEXT: return %192
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.15(%p0: f32[8,128,256], %p1: f32[8,128,1024], %p2: f32[1024,256], %p3: f32[256]) -> (f32[256], f32[8,128,256], f32[8,128,256], f32[256]) {
# CHECK-NEXT: %193 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %194 = reshape(%193, shape=[256]) : f32[256]
# CHECK-NEXT: %195 = matmul(%p1, %p2) : f32[8,128,256]
# CHECK-NEXT: %196 = add(%p0, %195) : f32[8,128,256]
# CHECK-NEXT: %197 = mul(%196, %p3) : f32[8,128,256]
# CHECK-NEXT: %198 = sum(%196, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %199 = reshape(%198, shape=[256]) : f32[256]
# CHECK-NEXT: %200 = make_tuple(%194, %196, %197, %199) : (f32[256], f32[8,128,256], f32[8,128,256], f32[256])
# CHECK-NEXT: return %200
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.16(%p0: f32[8,128,256], %p1: f32[256,256]) -> (f32[256], f32[8,128,256]) {
# CHECK-NEXT: %201 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %202 = reshape(%201, shape=[256]) : f32[256]
# CHECK-NEXT: %203 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %204 = make_tuple(%202, %203) : (f32[256], f32[8,128,256])
# CHECK-NEXT: return %204
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.17(%p0: f32[8,256,128], %p1: f32[8,128,256]) -> f32[256,256] {
# CHECK-NEXT: %205 = matmul(%p0, %p1) : f32[8,256,256]
# CHECK-NEXT: %206 = sum(%205, axis=[0], keepdims=true) : f32[1,256,256]
# CHECK-NEXT: %207 = reshape(%206, shape=[256,256]) : f32[256,256]
# CHECK-NEXT: return %207
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.18(%p0: f32[8,128,256]) -> f32[8,4,128,64] {
# CHECK-NEXT: %208 = reshape(%p0, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %209 = permute(%208, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: return %209
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.19(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %210 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %211 = mul(%210, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %212 = sum(%211, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %213 = sub(%210, %212) : f32[8,4,128,128]
# CHECK-NEXT: %214 = mul(%p2, %213) : f32[8,4,128,128]
# CHECK-NEXT: %215 = constant 0.125 : f32
# CHECK-NEXT: %216 = mul(%214, %215) : f32[8,4,128,128]
# CHECK-NEXT: return %216
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.20(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %217 = permute(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %218 = reshape(%217, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %218
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.21(%p0: f32[8,256,128], %p1: f32[8,128,256]) -> f32[256,256] {
# CHECK-NEXT: %219 = matmul(%p0, %p1) : f32[8,256,256]
# CHECK-NEXT: %220 = sum(%219, axis=[0], keepdims=true) : f32[1,256,256]
# CHECK-NEXT: %221 = reshape(%220, shape=[256,256]) : f32[256,256]
# CHECK-NEXT: return %221
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.22(%p0: f32[8,4,64,128]) -> f32[8,128,256] {
# CHECK-NEXT: %222 = permute(%p0, axes=[0,3,1,2]) : f32[8,128,4,64]
# CHECK-NEXT: %223 = reshape(%222, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %223
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.23(%p0: f32[8,128,256], %p1: f32[256,256]) -> (f32[256], f32[8,128,256]) {
# CHECK-NEXT: %224 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %225 = reshape(%224, shape=[256]) : f32[256]
# CHECK-NEXT: %226 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %227 = make_tuple(%225, %226) : (f32[256], f32[8,128,256])
# CHECK-NEXT: return %227
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.24(%p0: f32[8,256,128], %p1: f32[8,128,256]) -> f32[256,256] {
# CHECK-NEXT: %228 = matmul(%p0, %p1) : f32[8,256,256]
# CHECK-NEXT: %229 = sum(%228, axis=[0], keepdims=true) : f32[1,256,256]
# CHECK-NEXT: %230 = reshape(%229, shape=[256,256]) : f32[256,256]
# CHECK-NEXT: return %230
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.25(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %231 = permute(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %232 = reshape(%231, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %232
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.26(%p0: f32[8,128,256], %p1: f32[256,256]) -> (f32[256], f32[8,128,256]) {
# CHECK-NEXT: %233 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %234 = reshape(%233, shape=[256]) : f32[256]
# CHECK-NEXT: %235 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %236 = make_tuple(%234, %235) : (f32[256], f32[8,128,256])
# CHECK-NEXT: return %236
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.27(%p0: f32[8,256,128], %p1: f32[8,128,256]) -> f32[256,256] {
# CHECK-NEXT: %237 = matmul(%p0, %p1) : f32[8,256,256]
# CHECK-NEXT: %238 = sum(%237, axis=[0], keepdims=true) : f32[1,256,256]
# CHECK-NEXT: %239 = reshape(%238, shape=[256,256]) : f32[256,256]
# CHECK-NEXT: return %239
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.28(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> (f32[256], f32[8,128,256]) {
# CHECK-NEXT: %240 = sum(%p0, axis=[0,1], keepdims=true) : f32[1,1,256]
# CHECK-NEXT: %241 = reshape(%240, shape=[256]) : f32[256]
# CHECK-NEXT: %242 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %243 = add(%p2, %242) : f32[8,128,256]
# CHECK-NEXT: %244 = add(%243, %p3) : f32[8,128,256]
# CHECK-NEXT: %245 = add(%244, %p4) : f32[8,128,256]
# CHECK-NEXT: %246 = make_tuple(%241, %245) : (f32[256], f32[8,128,256])
# CHECK-NEXT: return %246
# CHECK-NEXT: }
