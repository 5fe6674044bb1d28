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
# CHECK: %62 = call @fused_step.6(%55, %26, %49) : f32[8,128,1024]
# CHECK: %68 = call @fused_step.8(%62, %24, %55, %47, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %88 = call @fused_step.9(%86, %87, %41) : f32[8,4,128,128]
# CHECK: %114 = call @fused_step.10(%95, %20, %70, %105, %113) : f32[8,128,256]
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %121 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %122 = add(%121, %p2) : f32[8,128,256]
# CHECK-NEXT: return %122
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %123 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %124 = add(%123, %p2) : f32[8,128,256]
# CHECK-NEXT: return %124
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %125 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %126 = add(%125, %p2) : f32[8,128,256]
# CHECK-NEXT: return %126
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %127 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %128 = constant 0.125 : f32
# CHECK-NEXT: %129 = mul(%127, %128) : f32[8,4,128,128]
# CHECK-NEXT: %130 = softmax(%129, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %130
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %131 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %132 = add(%131, %p2) : f32[8,128,1024]
# CHECK-NEXT: %133 = relu(%132) : f32[8,128,1024]
# CHECK-NEXT: %134 = make_tuple(%132, %133) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %134
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %135 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %136 = add(%p2, %135) : f32[8,128,256]
# CHECK-NEXT: %137 = add(%136, %p3) : f32[8,128,256]
# CHECK-NEXT: %138 = layer_norm(%137, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %139 = sum(%138, axis=none, keepdims=false) : f32
# CHECK-NEXT: %140 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %141 = broadcast_to(%140, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %142 = mean(%137, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %143 = sub(%137, %142) : f32[8,128,256]
# CHECK-NEXT: %144 = mul(%143, %143) : f32[8,128,256]
# CHECK-NEXT: %145 = mean(%144, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %146 = constant 1e-05 : f32
# CHECK-NEXT: %147 = add(%145, %146) : f32[8,128,1]
# CHECK-NEXT: %148 = rsqrt(%147) : f32[8,128,1]
# CHECK-NEXT: %149 = mul(%143, %148) : f32[8,128,256]
# CHECK-NEXT: %150 = mul(%141, %p4) : f32[8,128,256]
# CHECK-NEXT: %151 = mean(%150, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %152 = sub(%150, %151) : f32[8,128,256]
# CHECK-NEXT: %153 = mul(%150, %149) : f32[8,128,256]
# CHECK-NEXT: %154 = mean(%153, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %155 = mul(%149, %154) : f32[8,128,256]
# CHECK-NEXT: %156 = sub(%152, %155) : f32[8,128,256]
# CHECK-NEXT: %157 = mul(%148, %156) : f32[8,128,256]
# CHECK-NEXT: %158 = make_tuple(%139, %141, %149, %157) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %158
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,256], %p1: f32[1024,256], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %159 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,1024]
# CHECK-NEXT: %160 = constant 0.0 : f32
# CHECK-NEXT: %161 = gt(%p2, %160) : bool[8,128,1024]
# CHECK-NEXT: %162 = where(%161, %159, %160) : f32[8,128,1024]
# CHECK-NEXT: return %162
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %163 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %164 = add(%163, %p2) : f32[8,128,256]
# CHECK-NEXT: %165 = add(%p3, %164) : f32[8,128,256]
# CHECK-NEXT: %166 = layer_norm(%165, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %167 = mean(%165, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %168 = sub(%165, %167) : f32[8,128,256]
# CHECK-NEXT: %169 = make_tuple(%166, %168) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %169
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[256,1024], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %170 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %171 = add(%p2, %170) : f32[8,128,256]
# CHECK-NEXT: %172 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %173 = mean(%172, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %174 = constant 1e-05 : f32
# CHECK-NEXT: %175 = add(%173, %174) : f32[8,128,1]
# CHECK-NEXT: %176 = rsqrt(%175) : f32[8,128,1]
# CHECK-NEXT: %177 = mul(%p3, %176) : f32[8,128,256]
# CHECK-NEXT: %178 = mul(%171, %p4) : f32[8,128,256]
# CHECK-NEXT: %179 = mean(%178, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %180 = sub(%178, %179) : f32[8,128,256]
# CHECK-NEXT: %181 = mul(%178, %177) : f32[8,128,256]
# CHECK-NEXT: %182 = mean(%181, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %183 = mul(%177, %182) : f32[8,128,256]
# CHECK-NEXT: %184 = sub(%180, %183) : f32[8,128,256]
# CHECK-NEXT: %185 = mul(%176, %184) : f32[8,128,256]
# CHECK-NEXT: %186 = mul(%171, %177) : f32[8,128,256]
# CHECK-NEXT: %187 = make_tuple(%171, %185, %186) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %187
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %188 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %189 = mul(%188, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %190 = sum(%189, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %191 = sub(%188, %190) : f32[8,4,128,128]
# CHECK-NEXT: %192 = mul(%p2, %191) : f32[8,4,128,128]
# CHECK-NEXT: %193 = constant 0.125 : f32
# CHECK-NEXT: %194 = mul(%192, %193) : f32[8,4,128,128]
# CHECK-NEXT: return %194
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %195 = matmul(%p0, %p1, transpose_b=true) : f32[8,128,256]
# CHECK-NEXT: %196 = add(%p2, %195) : f32[8,128,256]
# CHECK-NEXT: %197 = add(%196, %p3) : f32[8,128,256]
# CHECK-NEXT: %198 = add(%197, %p4) : f32[8,128,256]
# CHECK-NEXT: return %198
# CHECK-NEXT: }
