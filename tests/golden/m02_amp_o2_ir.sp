# mixed precision O2 at lowering: the whole network in f16 (parameters cast at their use, the
# master copies stay f32), the network's output cast back to f32 for the loss, which runs in
# f32
# RUN: ir --stage typed
model Net() {
    param w: f32[4, 3] = normal(0.0, 0.5)
    param b: f32[3] = zeros()
    def forward(x) = relu(x @ w + b)
}

def main() {
    set_amp("O2", f16)
    let net = Net(seed=1)
    print(cross_entropy(net(normal(shape=(2, 4), seed=2)), [0, 2]))
}
# CHECK: %4 = call @Net.forward(%3, %2) : f16[2,3]
# CHECK-NEXT: %5 = cast(%4, dtype=f32) : f32[2,3]
# CHECK-NEXT: %6 = constant [0, 2] : i32[2]
# CHECK-NEXT: %7 = cross_entropy(%5, %6, reduction="mean") : f32
# CHECK: graph @Net.forward(%self: Net{w: f32[4,3], b: f32[3]}, %x: f32[2,4]) -> f16[2,3] {
# CHECK-NEXT: %10 = record_get(%self, field="w") : f32[4,3]
# CHECK-NEXT: %11 = record_get(%self, field="b") : f32[3]
# CHECK-NEXT: %12 = cast(%x, dtype=f16) : f16[2,4]
# CHECK-NEXT: %13 = cast(%10, dtype=f16) : f16[4,3]
# CHECK-NEXT: %14 = matmul(%12, %13) : f16[2,3]
# CHECK-NEXT: %15 = cast(%11, dtype=f16) : f16[3]
# CHECK-NEXT: %16 = add(%14, %15) : f16[2,3]
# CHECK-NEXT: %17 = relu(%16) : f16[2,3]
# CHECK-NEXT: return %17
