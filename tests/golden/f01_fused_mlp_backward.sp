# the fusion groups of a two-layer MLP's optimized backward: the GEMMs stay calls of BLAS
# with their bias + ReLU epilogues fused, cross-entropy and its gradient one row kernel with
# the last GEMM, the ReLU mask with the bias gradient (a column reduction)
# RUN: ir --stage fused
model MLP() {
    param w1: f32[4, 8] = normal(0.0, 0.1)
    param b1: f32[8] = zeros()
    param w2: f32[8, 3] = normal(0.0, 0.1)
    param b2: f32[3] = zeros()
    def forward(x) = relu(x @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

@noinline
def step(net: MLP, x: f32[2, 4], y: i32[2]) = value_and_grad(loss)(net, x, y)

def main() {
    let (l, g) = step(MLP(), normal(shape=(2, 4), seed=1), [0, 2])
    print(l, g.w1.shape)
}
# CHECK: @noinline graph @step(%net: MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}, %x: f32[2,4], %y: i32[2]) -> (f32, MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}) {
# CHECK-NEXT: %14 = record_get(%net, field="w1") : f32[4,8]
# CHECK-NEXT: %15 = record_get(%net, field="b1") : f32[8]
# CHECK-NEXT: %16 = record_get(%net, field="w2") : f32[8,3]
# CHECK-NEXT: %17 = record_get(%net, field="b2") : f32[3]
# CHECK-NEXT: %18 = call @fused_step(%x, %14, %15) : f32[2,8]
# CHECK-NEXT: %19 = call @fused_step.1(%18, %16, %17, %y) : (f32, f32[2,3])
# CHECK-NEXT: %20 = tuple_get(%19, index=0) : f32
# CHECK-NEXT: %21 = tuple_get(%19, index=1) : f32[2,3]
# CHECK-NEXT: %22 = call @fused_step.2(%21) : f32[3]
# CHECK-NEXT: %23 = call @fused_step.3(%21, %16, %18) : (f32[2,8], f32[8])
# CHECK-NEXT: %24 = tuple_get(%23, index=0) : f32[2,8]
# CHECK-NEXT: %25 = tuple_get(%23, index=1) : f32[8]
# CHECK-NEXT: %26 = matmul(%18, %21, transpose_a=true) : f32[8,3]
# CHECK-NEXT: %27 = matmul(%x, %24, transpose_a=true) : f32[4,8]
# CHECK-NEXT: %28 = make_record(%27, %25, %26, %22, name="MLP", names="w1,b1,w2,b2") : MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}
# CHECK-NEXT: %29 = make_tuple(%20, %28) : (f32, MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]})
# CHECK-NEXT: return %29
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step(%p0: f32[2,4], %p1: f32[4,8], %p2: f32[8]) -> f32[2,8] {
# CHECK-NEXT: %30 = matmul(%p0, %p1) : f32[2,8]
# CHECK-NEXT: %31 = add(%30, %p2) : f32[2,8]
# CHECK-NEXT: %32 = relu(%31) : f32[2,8]
# CHECK-NEXT: return %32
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[2,8], %p1: f32[8,3], %p2: f32[3], %p3: i32[2]) -> (f32, f32[2,3]) {
# CHECK-NEXT: %33 = matmul(%p0, %p1) : f32[2,3]
# CHECK-NEXT: %34 = add(%33, %p2) : f32[2,3]
# CHECK-NEXT: %35 = cross_entropy(%34, %p3, reduction="mean") : f32
# CHECK-NEXT: %36 = softmax(%34, axis=1) : f32[2,3]
# CHECK-NEXT: %37 = one_hot(%p3, num_classes=3, dtype=f32) : f32[2,3]
# CHECK-NEXT: %38 = sub(%36, %37) : f32[2,3]
# CHECK-NEXT: %39 = constant 0.5 : f32
# CHECK-NEXT: %40 = mul(%39, %38) : f32[2,3]
# CHECK-NEXT: %41 = make_tuple(%35, %40) : (f32, f32[2,3])
# CHECK-NEXT: return %41
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[2,3]) -> f32[3] {
# CHECK-NEXT: %42 = sum(%p0, axis=[0], keepdims=true) : f32[1,3]
# CHECK-NEXT: %43 = reshape(%42, shape=[3]) : f32[3]
# CHECK-NEXT: return %43
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[2,3], %p1: f32[8,3], %p2: f32[2,8]) -> (f32[2,8], f32[8]) {
# CHECK-NEXT: %44 = matmul(%p0, %p1, transpose_b=true) : f32[2,8]
# CHECK-NEXT: %45 = constant 0.0 : f32
# CHECK-NEXT: %46 = gt(%p2, %45) : bool[2,8]
# CHECK-NEXT: %47 = where(%46, %44, %45) : f32[2,8]
# CHECK-NEXT: %48 = sum(%47, axis=[0], keepdims=true) : f32[1,8]
# CHECK-NEXT: %49 = reshape(%48, shape=[8]) : f32[8]
# CHECK-NEXT: %50 = make_tuple(%47, %49) : (f32[2,8], f32[8])
# CHECK-NEXT: return %50
# CHECK-NEXT: }
