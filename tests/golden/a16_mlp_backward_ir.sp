# the optimized backward IR of a two-layer MLP: first-order, no closures, no tuple packing
# RUN: ir --stage optimized
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
# CHECK-NEXT: %18 = matmul(%x, %14) : f32[2,8]
# CHECK-NEXT: %19 = add(%18, %15) : f32[2,8]
# CHECK-NEXT: %20 = relu(%19) : f32[2,8]
# CHECK-NEXT: %21 = matmul(%20, %16) : f32[2,3]
# CHECK-NEXT: %22 = add(%21, %17) : f32[2,3]
# CHECK-NEXT: %23 = cross_entropy(%22, %y, reduction="mean") : f32
# CHECK-NEXT: %24 = softmax(%22, axis=1) : f32[2,3]
# CHECK-NEXT: %25 = one_hot(%y, num_classes=3, dtype=f32) : f32[2,3]
# CHECK-NEXT: %26 = sub(%24, %25) : f32[2,3]
# CHECK-NEXT: %27 = constant 0.5 : f32
# CHECK-NEXT: %28 = mul(%27, %26) : f32[2,3]
# CHECK-NEXT: %29 = sum(%28, axis=[0], keepdims=true) : f32[1,3]
# CHECK-NEXT: %30 = reshape(%29, shape=[3]) : f32[3]
# CHECK-NEXT: %31 = permute(%16, axes=[1,0]) : f32[3,8]
# CHECK-NEXT: %32 = matmul(%28, %31) : f32[2,8]
# CHECK-NEXT: %33 = permute(%20, axes=[1,0]) : f32[8,2]
# CHECK-NEXT: %34 = matmul(%33, %28) : f32[8,3]
# CHECK-NEXT: %35 = constant 0.0 : f32
# CHECK-NEXT: %36 = gt(%20, %35) : bool[2,8]
# CHECK-NEXT: %37 = where(%36, %32, %35) : f32[2,8]
# CHECK-NEXT: %38 = sum(%37, axis=[0], keepdims=true) : f32[1,8]
# CHECK-NEXT: %39 = reshape(%38, shape=[8]) : f32[8]
# CHECK-NEXT: %40 = permute(%x, axes=[1,0]) : f32[4,2]
# CHECK-NEXT: %41 = matmul(%40, %37) : f32[4,8]
# CHECK-NEXT: %42 = make_record(%41, %39, %34, %30, name="MLP", names="w1,b1,w2,b2") : MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]}
# CHECK-NEXT: %43 = make_tuple(%23, %42) : (f32, MLP{w1: f32[4,8], b1: f32[8], w2: f32[8,3], b2: f32[3]})
# CHECK-NEXT: return %43
# CHECK-NEXT: }
