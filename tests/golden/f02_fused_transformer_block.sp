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
# CHECK: %45 = call @fused_step.7(%44, %22, %23, %x, %28, %29) : (f32[8,128,256], f32[8,128,256])
# CHECK: %48 = call @fused_step.4(%46, %24, %25) : (f32[8,128,1024], f32[8,128,1024])
# CHECK: %51 = call @fused_step.5(%50, %26, %46, %27, %30, %31) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %65 = call @fused_step.6(%55, %26, %49) : f32[8,128,1024]
# CHECK: %71 = call @fused_step.8(%65, %24, %55, %47, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %88 = call @fused_step.9(%86, %87, %41) : f32[8,4,128,128]
# CHECK: %115 = call @fused_step.10(%95, %20, %73, %107, %114) : f32[8,128,256]
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %119 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %120 = add(%119, %p2) : f32[8,128,256]
# CHECK-NEXT: return %120
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %121 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %122 = add(%121, %p2) : f32[8,128,256]
# CHECK-NEXT: return %122
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %123 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %124 = add(%123, %p2) : f32[8,128,256]
# CHECK-NEXT: return %124
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %125 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %126 = constant 0.125 : f32
# CHECK-NEXT: %127 = mul(%125, %126) : f32[8,4,128,128]
# CHECK-NEXT: %128 = softmax(%127, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %128
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %129 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %130 = add(%129, %p2) : f32[8,128,1024]
# CHECK-NEXT: %131 = relu(%130) : f32[8,128,1024]
# CHECK-NEXT: %132 = make_tuple(%130, %131) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %132
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %133 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %134 = add(%p2, %133) : f32[8,128,256]
# CHECK-NEXT: %135 = add(%134, %p3) : f32[8,128,256]
# CHECK-NEXT: %136 = layer_norm(%135, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %137 = sum(%136, axis=none, keepdims=false) : f32
# CHECK-NEXT: %138 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %139 = broadcast_to(%138, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %140 = mean(%135, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %141 = sub(%135, %140) : f32[8,128,256]
# CHECK-NEXT: %142 = mul(%141, %141) : f32[8,128,256]
# CHECK-NEXT: %143 = mean(%142, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %144 = constant 1e-05 : f32
# CHECK-NEXT: %145 = add(%143, %144) : f32[8,128,1]
# CHECK-NEXT: %146 = rsqrt(%145) : f32[8,128,1]
# CHECK-NEXT: %147 = mul(%141, %146) : f32[8,128,256]
# CHECK-NEXT: %148 = mul(%139, %p4) : f32[8,128,256]
# CHECK-NEXT: %149 = mean(%148, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %150 = sub(%148, %149) : f32[8,128,256]
# CHECK-NEXT: %151 = mul(%148, %147) : f32[8,128,256]
# CHECK-NEXT: %152 = mean(%151, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %153 = mul(%147, %152) : f32[8,128,256]
# CHECK-NEXT: %154 = sub(%150, %153) : f32[8,128,256]
# CHECK-NEXT: %155 = mul(%146, %154) : f32[8,128,256]
# CHECK-NEXT: %156 = make_tuple(%137, %139, %147, %155) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %156
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,256], %p1: f32[1024,256], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %157 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,1024]
# CHECK-NEXT: %158 = constant 0.0 : f32
# CHECK-NEXT: %159 = gt(%p2, %158) : bool[8,128,1024]
# CHECK-NEXT: %160 = where(%159, %157, %158) : f32[8,128,1024]
# CHECK-NEXT: return %160
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %161 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %162 = add(%161, %p2) : f32[8,128,256]
# CHECK-NEXT: %163 = add(%p3, %162) : f32[8,128,256]
# CHECK-NEXT: %164 = layer_norm(%163, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %165 = mean(%163, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %166 = sub(%163, %165) : f32[8,128,256]
# CHECK-NEXT: %167 = make_tuple(%164, %166) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %167
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[256,1024], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %168 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %169 = add(%p2, %168) : f32[8,128,256]
# CHECK-NEXT: %170 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %171 = mean(%170, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %172 = constant 1e-05 : f32
# CHECK-NEXT: %173 = add(%171, %172) : f32[8,128,1]
# CHECK-NEXT: %174 = rsqrt(%173) : f32[8,128,1]
# CHECK-NEXT: %175 = mul(%p3, %174) : f32[8,128,256]
# CHECK-NEXT: %176 = mul(%169, %p4) : f32[8,128,256]
# CHECK-NEXT: %177 = mean(%176, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %178 = sub(%176, %177) : f32[8,128,256]
# CHECK-NEXT: %179 = mul(%176, %175) : f32[8,128,256]
# CHECK-NEXT: %180 = mean(%179, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %181 = mul(%175, %180) : f32[8,128,256]
# CHECK-NEXT: %182 = sub(%178, %181) : f32[8,128,256]
# CHECK-NEXT: %183 = mul(%174, %182) : f32[8,128,256]
# CHECK-NEXT: %184 = mul(%169, %175) : f32[8,128,256]
# CHECK-NEXT: %185 = make_tuple(%169, %183, %184) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %185
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %186 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %187 = mul(%186, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %188 = sum(%187, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %189 = sub(%186, %188) : f32[8,4,128,128]
# CHECK-NEXT: %190 = mul(%p2, %189) : f32[8,4,128,128]
# CHECK-NEXT: %191 = constant 0.125 : f32
# CHECK-NEXT: %192 = mul(%190, %191) : f32[8,4,128,128]
# CHECK-NEXT: return %192
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %193 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %194 = add(%p2, %193) : f32[8,128,256]
# CHECK-NEXT: %195 = add(%194, %p3) : f32[8,128,256]
# CHECK-NEXT: %196 = add(%195, %p4) : f32[8,128,256]
# CHECK-NEXT: return %196
# CHECK-NEXT: }
