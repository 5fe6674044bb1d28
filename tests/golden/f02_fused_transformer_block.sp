# the fusion groups of one Transformer encoder block's forward and backward (W4 of
# benchmarks/workloads/README.md: d_model 256, 4 heads, FFN 1024, post-LayerNorm, batch 8 x 128)
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
# CHECK: %44 = call @fused_step.8(%43, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK: %47 = call @fused_step.5(%45, %24, %25) : (f32[8,128,1024], f32[8,128,1024])
# CHECK: %50 = call @fused_step.6(%49, %26, %45, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %62 = call @fused_step.7(%54, %61, %48) : f32[8,128,1024]
# CHECK: %70 = call @fused_step.9(%62, %69, %54, %46, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %90 = call @fused_step.10(%85) : f32[8,4,128,64]
# CHECK: %92 = call @fused_step.11(%90, %91, %41) : f32[8,4,128,128]
# CHECK: %99 = call @fused_step.12(%94) : f32[8,128,256]
# CHECK: %107 = call @fused_step.13(%98) : f32[8,128,256]
# CHECK: %115 = call @fused_step.14(%96) : f32[8,128,256]
# CHECK: %120 = call @fused_step.15(%99, %102, %72, %111, %119) : f32[8,128,256]
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %127 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %128 = add(%127, %p2) : f32[8,128,256]
# CHECK-NEXT: return %128
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %129 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %130 = add(%129, %p2) : f32[8,128,256]
# CHECK-NEXT: return %130
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %131 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %132 = add(%131, %p2) : f32[8,128,256]
# CHECK-NEXT: return %132
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %133 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %134 = constant 0.125 : f32
# CHECK-NEXT: %135 = mul(%133, %134) : f32[8,4,128,128]
# CHECK-NEXT: %136 = softmax(%135, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %136
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %137 = transpose(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %138 = reshape(%137, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %138
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %139 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %140 = add(%139, %p2) : f32[8,128,1024]
# CHECK-NEXT: %141 = relu(%140) : f32[8,128,1024]
# CHECK-NEXT: %142 = make_tuple(%140, %141) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %142
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %143 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %144 = add(%p2, %143) : f32[8,128,256]
# CHECK-NEXT: %145 = add(%144, %p3) : f32[8,128,256]
# CHECK-NEXT: %146 = layer_norm(%145, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %147 = sum(%146, axis=none, keepdims=false) : f32
# CHECK-NEXT: %148 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %149 = broadcast_to(%148, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %150 = mean(%145, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %151 = sub(%145, %150) : f32[8,128,256]
# CHECK-NEXT: %152 = mul(%151, %151) : f32[8,128,256]
# CHECK-NEXT: %153 = mean(%152, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %154 = constant 1e-05 : f32
# CHECK-NEXT: %155 = add(%153, %154) : f32[8,128,1]
# CHECK-NEXT: %156 = rsqrt(%155) : f32[8,128,1]
# CHECK-NEXT: %157 = mul(%151, %156) : f32[8,128,256]
# CHECK-NEXT: %158 = mul(%149, %p4) : f32[8,128,256]
# CHECK-NEXT: %159 = mean(%158, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %160 = sub(%158, %159) : f32[8,128,256]
# CHECK-NEXT: %161 = mul(%158, %157) : f32[8,128,256]
# CHECK-NEXT: %162 = mean(%161, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %163 = mul(%157, %162) : f32[8,128,256]
# CHECK-NEXT: %164 = sub(%160, %163) : f32[8,128,256]
# CHECK-NEXT: %165 = mul(%156, %164) : f32[8,128,256]
# CHECK-NEXT: %166 = make_tuple(%147, %149, %157, %165) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %166
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %167 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %168 = constant 0.0 : f32
# CHECK-NEXT: %169 = gt(%p2, %168) : bool[8,128,1024]
# CHECK-NEXT: %170 = where(%169, %167, %168) : f32[8,128,1024]
# CHECK-NEXT: return %170
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %171 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %172 = add(%171, %p2) : f32[8,128,256]
# CHECK-NEXT: %173 = add(%p3, %172) : f32[8,128,256]
# CHECK-NEXT: %174 = layer_norm(%173, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %175 = mean(%173, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %176 = sub(%173, %175) : f32[8,128,256]
# CHECK-NEXT: %177 = make_tuple(%174, %176) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %177
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %178 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %179 = add(%p2, %178) : f32[8,128,256]
# CHECK-NEXT: %180 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %181 = mean(%180, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %182 = constant 1e-05 : f32
# CHECK-NEXT: %183 = add(%181, %182) : f32[8,128,1]
# CHECK-NEXT: %184 = rsqrt(%183) : f32[8,128,1]
# CHECK-NEXT: %185 = mul(%p3, %184) : f32[8,128,256]
# CHECK-NEXT: %186 = mul(%179, %p4) : f32[8,128,256]
# CHECK-NEXT: %187 = mean(%186, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %188 = sub(%186, %187) : f32[8,128,256]
# CHECK-NEXT: %189 = mul(%186, %185) : f32[8,128,256]
# CHECK-NEXT: %190 = mean(%189, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %191 = mul(%185, %190) : f32[8,128,256]
# CHECK-NEXT: %192 = sub(%188, %191) : f32[8,128,256]
# CHECK-NEXT: %193 = mul(%184, %192) : f32[8,128,256]
# CHECK-NEXT: %194 = mul(%179, %185) : f32[8,128,256]
# CHECK-NEXT: %195 = make_tuple(%179, %193, %194) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %195
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256]) -> f32[8,4,128,64] {
# CHECK-NEXT: %196 = reshape(%p0, shape=[8,128,4,64]) : f32[8,128,4,64]
# CHECK-NEXT: %197 = permute(%196, axes=[0,2,1,3]) : f32[8,4,128,64]
# CHECK-NEXT: return %197
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.11(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %198 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %199 = mul(%198, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %200 = sum(%199, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %201 = sub(%198, %200) : f32[8,4,128,128]
# CHECK-NEXT: %202 = mul(%p2, %201) : f32[8,4,128,128]
# CHECK-NEXT: %203 = constant 0.125 : f32
# CHECK-NEXT: %204 = mul(%202, %203) : f32[8,4,128,128]
# CHECK-NEXT: return %204
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.12(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %205 = permute(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %206 = reshape(%205, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %206
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.13(%p0: f32[8,4,64,128]) -> f32[8,128,256] {
# CHECK-NEXT: %207 = permute(%p0, axes=[0,3,1,2]) : f32[8,128,4,64]
# CHECK-NEXT: %208 = reshape(%207, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %208
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.14(%p0: f32[8,4,128,64]) -> f32[8,128,256] {
# CHECK-NEXT: %209 = permute(%p0, axes=[0,2,1,3]) : f32[8,128,4,64]
# CHECK-NEXT: %210 = reshape(%209, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: return %210
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.15(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %211 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %212 = add(%p2, %211) : f32[8,128,256]
# CHECK-NEXT: %213 = add(%212, %p3) : f32[8,128,256]
# CHECK-NEXT: %214 = add(%213, %p4) : f32[8,128,256]
# CHECK-NEXT: return %214
# CHECK-NEXT: }
