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
# CHECK-NEXT: %18 = call @fused_step(%x, %14, %15) : (f32[2,8], f32[2,8])
# CHECK-NEXT: %19 = tuple_get(%18, index=0) : f32[2,8]
# CHECK-NEXT: %20 = tuple_get(%18, index=1) : f32[2,8]
# CHECK-NEXT: %21 = call @fused_step.1(%20, %16, %17, %y) : (f32, f32[2,3])
# CHECK-NEXT: %22 = tuple_get(%21, index=0) : f32
# CHECK-NEXT: %23 = tuple_get(%21, index=1) : f32[2,3]
# CHECK-NEXT: %24 = call @fused_step.2(%23) : f32[3]
# CHECK-NEXT: %25 = call @fused_step.3(%23, %16, %19) : (f32[2,8], f32[8])
# CHECK-NEXT: %26 = tuple_get(%25, index=0) : f32[2,8]
# CHECK-NEXT: %27 = tuple_get(%25, index=1) : f32[8]
# CHECK-NEXT: %28 = matmul(%20, %23, transpose_a=true) : f32[8,3]
# CHECK-NEXT: %29 = matmul(%x, %26, transpose_a=true) : f32[4,8]
# CHECK-NEXT: %30 = make_record(%29, %27, %28, %24, name="MLP", names="w1,b1,w2,b2") : MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}
# CHECK-NEXT: %31 = make_tuple(%22, %30) : (f32, MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]})
# CHECK-NEXT: return %31
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step(%p0: f32[2,4], %p1: f32[4,8], %p2: f32[8]) -> (f32[2,8], f32[2,8]) {
# CHECK-NEXT: %32 = matmul(%p0, %p1) : f32[2,8]
# CHECK-NEXT: %33 = add(%32, %p2) : f32[2,8]
# CHECK-NEXT: %34 = relu(%33) : f32[2,8]
# CHECK-NEXT: %35 = make_tuple(%33, %34) : (f32[2,8], f32[2,8])
# CHECK-NEXT: return %35
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[2,8], %p1: f32[8,3], %p2: f32[3], %p3: i32[2]) -> (f32, f32[2,3]) {
# CHECK-NEXT: %36 = matmul(%p0, %p1) : f32[2,3]
# CHECK-NEXT: %37 = add(%36, %p2) : f32[2,3]
# CHECK-NEXT: %38 = cross_entropy(%37, %p3, reduction="mean") : f32
# CHECK-NEXT: %39 = softmax(%37, axis=1) : f32[2,3]
# CHECK-NEXT: %40 = one_hot(%p3, num_classes=3, dtype=f32) : f32[2,3]
# CHECK-NEXT: %41 = sub(%39, %40) : f32[2,3]
# CHECK-NEXT: %42 = constant 0.5 : f32
# CHECK-NEXT: %43 = mul(%42, %41) : f32[2,3]
# CHECK-NEXT: %44 = make_tuple(%38, %43) : (f32, f32[2,3])
# CHECK-NEXT: return %44
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[2,3]) -> f32[3] {
# CHECK-NEXT: %45 = sum(%p0, axis=[0], keepdims=true) : f32[1,3]
# CHECK-NEXT: %46 = reshape(%45, shape=[3]) : f32[3]
# CHECK-NEXT: return %46
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[2,3], %p1: f32[8,3], %p2: f32[2,8]) -> (f32[2,8], f32[8]) {
# CHECK-NEXT: %47 = matmul(%p0, %p1, transpose_b=true) : f32[2,8]
# CHECK-NEXT: %48 = constant 0.0 : f32
# CHECK-NEXT: %49 = gt(%p2, %48) : bool[2,8]
# CHECK-NEXT: %50 = where(%49, %47, %48) : f32[2,8]
# CHECK-NEXT: %51 = sum(%50, axis=[0], keepdims=true) : f32[1,8]
# CHECK-NEXT: %52 = reshape(%51, shape=[8]) : f32[8]
# CHECK-NEXT: %53 = make_tuple(%50, %52) : (f32[2,8], f32[8])
# CHECK-NEXT: return %53
# CHECK-NEXT: }
