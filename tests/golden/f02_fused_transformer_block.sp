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
# CHECK: %63 = call @fused_step.6(%55, %62, %49) : f32[8,128,1024]
# CHECK: %71 = call @fused_step.8(%63, %70, %55, %47, %28) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK: %94 = call @fused_step.9(%92, %93, %41) : f32[8,4,128,128]
# CHECK: %125 = call @fused_step.10(%102, %105, %73, %115, %124) : f32[8,128,256]
# CHECK: @fused graph @fused_step(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %132 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %133 = add(%132, %p2) : f32[8,128,256]
# CHECK-NEXT: return %133
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %134 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %135 = add(%134, %p2) : f32[8,128,256]
# CHECK-NEXT: return %135
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256]) -> f32[8,128,256] {
# CHECK-NEXT: %136 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %137 = add(%136, %p2) : f32[8,128,256]
# CHECK-NEXT: return %137
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %138 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %139 = constant 0.125 : f32
# CHECK-NEXT: %140 = mul(%138, %139) : f32[8,4,128,128]
# CHECK-NEXT: %141 = softmax(%140, axis=-1) : f32[8,4,128,128]
# CHECK-NEXT: return %141
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.4(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[1024]) -> (f32[8,128,1024], f32[8,128,1024]) {
# CHECK-NEXT: %142 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %143 = add(%142, %p2) : f32[8,128,1024]
# CHECK-NEXT: %144 = relu(%143) : f32[8,128,1024]
# CHECK-NEXT: %145 = make_tuple(%143, %144) : (f32[8,128,1024], f32[8,128,1024])
# CHECK-NEXT: return %145
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.5(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[256], %p4: f32[256], %p5: f32[256]) -> (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %146 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %147 = add(%p2, %146) : f32[8,128,256]
# CHECK-NEXT: %148 = add(%147, %p3) : f32[8,128,256]
# CHECK-NEXT: %149 = layer_norm(%148, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %150 = sum(%149, axis=none, keepdims=false) : f32
# CHECK-NEXT: %151 = constant [[[1.0]]] : f32[1,1,1]
# CHECK-NEXT: %152 = broadcast_to(%151, shape=[8,128,256]) : f32[8,128,256]
# CHECK-NEXT: %153 = mean(%148, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %154 = sub(%148, %153) : f32[8,128,256]
# CHECK-NEXT: %155 = mul(%154, %154) : f32[8,128,256]
# CHECK-NEXT: %156 = mean(%155, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %157 = constant 1e-05 : f32
# CHECK-NEXT: %158 = add(%156, %157) : f32[8,128,1]
# CHECK-NEXT: %159 = rsqrt(%158) : f32[8,128,1]
# CHECK-NEXT: %160 = mul(%154, %159) : f32[8,128,256]
# CHECK-NEXT: %161 = mul(%152, %p4) : f32[8,128,256]
# CHECK-NEXT: %162 = mean(%161, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %163 = sub(%161, %162) : f32[8,128,256]
# CHECK-NEXT: %164 = mul(%161, %160) : f32[8,128,256]
# CHECK-NEXT: %165 = mean(%164, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %166 = mul(%160, %165) : f32[8,128,256]
# CHECK-NEXT: %167 = sub(%163, %166) : f32[8,128,256]
# CHECK-NEXT: %168 = mul(%159, %167) : f32[8,128,256]
# CHECK-NEXT: %169 = make_tuple(%150, %152, %160, %168) : (f32, f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %169
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.6(%p0: f32[8,128,256], %p1: f32[256,1024], %p2: f32[8,128,1024]) -> f32[8,128,1024] {
# CHECK-NEXT: %170 = matmul(%p0, %p1) : f32[8,128,1024]
# CHECK-NEXT: %171 = constant 0.0 : f32
# CHECK-NEXT: %172 = gt(%p2, %171) : bool[8,128,1024]
# CHECK-NEXT: %173 = where(%172, %170, %171) : f32[8,128,1024]
# CHECK-NEXT: return %173
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.7(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[256], %p3: f32[8,128,256], %p4: f32[256], %p5: f32[256]) -> (f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %174 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %175 = add(%174, %p2) : f32[8,128,256]
# CHECK-NEXT: %176 = add(%p3, %175) : f32[8,128,256]
# CHECK-NEXT: %177 = layer_norm(%176, %p4, %p5, ndim=1, eps=1e-05) : f32[8,128,256]
# CHECK-NEXT: %178 = mean(%176, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %179 = sub(%176, %178) : f32[8,128,256]
# CHECK-NEXT: %180 = make_tuple(%177, %179) : (f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %180
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.8(%p0: f32[8,128,1024], %p1: f32[1024,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[256]) -> (f32[8,128,256], f32[8,128,256], f32[8,128,256]) {
# CHECK-NEXT: %181 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %182 = add(%p2, %181) : f32[8,128,256]
# CHECK-NEXT: %183 = mul(%p3, %p3) : f32[8,128,256]
# CHECK-NEXT: %184 = mean(%183, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %185 = constant 1e-05 : f32
# CHECK-NEXT: %186 = add(%184, %185) : f32[8,128,1]
# CHECK-NEXT: %187 = rsqrt(%186) : f32[8,128,1]
# CHECK-NEXT: %188 = mul(%p3, %187) : f32[8,128,256]
# CHECK-NEXT: %189 = mul(%182, %p4) : f32[8,128,256]
# CHECK-NEXT: %190 = mean(%189, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %191 = sub(%189, %190) : f32[8,128,256]
# CHECK-NEXT: %192 = mul(%189, %188) : f32[8,128,256]
# CHECK-NEXT: %193 = mean(%192, axis=[2], keepdims=true) : f32[8,128,1]
# CHECK-NEXT: %194 = mul(%188, %193) : f32[8,128,256]
# CHECK-NEXT: %195 = sub(%191, %194) : f32[8,128,256]
# CHECK-NEXT: %196 = mul(%187, %195) : f32[8,128,256]
# CHECK-NEXT: %197 = mul(%182, %188) : f32[8,128,256]
# CHECK-NEXT: %198 = make_tuple(%182, %196, %197) : (f32[8,128,256], f32[8,128,256], f32[8,128,256])
# CHECK-NEXT: return %198
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.9(%p0: f32[8,4,128,64], %p1: f32[8,4,64,128], %p2: f32[8,4,128,128]) -> f32[8,4,128,128] {
# CHECK-NEXT: %199 = matmul(%p0, %p1) : f32[8,4,128,128]
# CHECK-NEXT: %200 = mul(%199, %p2) : f32[8,4,128,128]
# CHECK-NEXT: %201 = sum(%200, axis=[3], keepdims=true) : f32[8,4,128,1]
# CHECK-NEXT: %202 = sub(%199, %201) : f32[8,4,128,128]
# CHECK-NEXT: %203 = mul(%p2, %202) : f32[8,4,128,128]
# CHECK-NEXT: %204 = constant 0.125 : f32
# CHECK-NEXT: %205 = mul(%203, %204) : f32[8,4,128,128]
# CHECK-NEXT: return %205
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.10(%p0: f32[8,128,256], %p1: f32[256,256], %p2: f32[8,128,256], %p3: f32[8,128,256], %p4: f32[8,128,256]) -> f32[8,128,256] {
# CHECK-NEXT: %206 = matmul(%p0, %p1) : f32[8,128,256]
# CHECK-NEXT: %207 = add(%p2, %206) : f32[8,128,256]
# CHECK-NEXT: %208 = add(%207, %p3) : f32[8,128,256]
# CHECK-NEXT: %209 = add(%208, %p4) : f32[8,128,256]
# CHECK-NEXT: return %209
# CHECK-NEXT: }
