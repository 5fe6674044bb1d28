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
# CHECK-NEXT: %25 = permute(%16, axes=[1,0]) : f32[3,8]
# CHECK-NEXT: %26 = call @fused_step.3(%23, %25, %19) : (f32[2,8], f32[8])
# CHECK-NEXT: %27 = tuple_get(%26, index=0) : f32[2,8]
# CHECK-NEXT: %28 = tuple_get(%26, index=1) : f32[8]
# CHECK-NEXT: %29 = permute(%20, axes=[1,0]) : f32[8,2]
# CHECK-NEXT: %30 = matmul(%29, %23) : f32[8,3]
# CHECK-NEXT: %31 = permute(%x, axes=[1,0]) : f32[4,2]
# CHECK-NEXT: %32 = matmul(%31, %27) : f32[4,8]
# CHECK-NEXT: %33 = make_record(%32, %28, %30, %24, name="MLP", names="w1,b1,w2,b2") : MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}
# CHECK-NEXT: %34 = make_tuple(%22, %33) : (f32, MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]})
# CHECK-NEXT: return %34
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step(%p0: f32[2,4], %p1: f32[4,8], %p2: f32[8]) -> (f32[2,8], f32[2,8]) {
# CHECK-NEXT: %35 = matmul(%p0, %p1) : f32[2,8]
# CHECK-NEXT: %36 = add(%35, %p2) : f32[2,8]
# CHECK-NEXT: %37 = relu(%36) : f32[2,8]
# CHECK-NEXT: %38 = make_tuple(%36, %37) : (f32[2,8], f32[2,8])
# CHECK-NEXT: return %38
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.1(%p0: f32[2,8], %p1: f32[8,3], %p2: f32[3], %p3: i32[2]) -> (f32, f32[2,3]) {
# CHECK-NEXT: %39 = matmul(%p0, %p1) : f32[2,3]
# CHECK-NEXT: %40 = add(%39, %p2) : f32[2,3]
# CHECK-NEXT: %41 = cross_entropy(%40, %p3, reduction="mean") : f32
# CHECK-NEXT: %42 = softmax(%40, axis=1) : f32[2,3]
# CHECK-NEXT: %43 = one_hot(%p3, num_classes=3, dtype=f32) : f32[2,3]
# CHECK-NEXT: %44 = sub(%42, %43) : f32[2,3]
# CHECK-NEXT: %45 = constant 0.5 : f32
# CHECK-NEXT: %46 = mul(%45, %44) : f32[2,3]
# CHECK-NEXT: %47 = make_tuple(%41, %46) : (f32, f32[2,3])
# CHECK-NEXT: return %47
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.2(%p0: f32[2,3]) -> f32[3] {
# CHECK-NEXT: %48 = sum(%p0, axis=[0], keepdims=true) : f32[1,3]
# CHECK-NEXT: %49 = reshape(%48, shape=[3]) : f32[3]
# CHECK-NEXT: return %49
# CHECK-NEXT: }
# CHECK: @fused graph @fused_step.3(%p0: f32[2,3], %p1: f32[3,8], %p2: f32[2,8]) -> (f32[2,8], f32[8]) {
# CHECK-NEXT: %50 = matmul(%p0, %p1) : f32[2,8]
# CHECK-NEXT: %51 = constant 0.0 : f32
# CHECK-NEXT: %52 = gt(%p2, %51) : bool[2,8]
# CHECK-NEXT: %53 = where(%52, %50, %51) : f32[2,8]
# CHECK-NEXT: %54 = sum(%53, axis=[0], keepdims=true) : f32[1,8]
# CHECK-NEXT: %55 = reshape(%54, shape=[8]) : f32[8]
# CHECK-NEXT: %56 = make_tuple(%53, %55) : (f32[2,8], f32[8])
# CHECK-NEXT: return %56
# CHECK-NEXT: }
