# mixed precision O1 (autocast) at lowering: matmul's f32 inputs cast to bf16, its bf16
# result promoted to f32 by the f32 bias, relu in f32; the network's output stays f32
# RUN: ir --stage typed
model Net() {
    param w: f32[4, 3] = normal(0.0, 0.5)
    param b: f32[3] = zeros()
    def forward(x) = relu(x @ w + b)
}

def main() {
    set_amp("O1", bf16)
    let net = Net(seed=1)
    print(net(normal(shape=(2, 4), seed=2)))
}
# CHECK: %4 = call @Net.forward(%3, %2) : f32[2,3]
# CHECK: graph @Net.forward(%self: Net{w: f32[4,3], b: f32[3]}, %x: f32[2,4]) -> f32[2,3] {
# CHECK-NEXT: %7 = record_get(%self, field="w") : f32[4,3]
# CHECK-NEXT: %8 = record_get(%self, field="b") : f32[3]
# CHECK-NEXT: %9 = cast(%x, dtype=bf16) : bf16[2,4]
# CHECK-NEXT: %10 = cast(%7, dtype=bf16) : bf16[4,3]
# CHECK-NEXT: %11 = matmul(%9, %10) : bf16[2,3]
# CHECK-NEXT: %12 = cast(%11, dtype=f32) : f32[2,3]
# CHECK-NEXT: %13 = add(%12, %8) : f32[2,3]
# CHECK-NEXT: %14 = relu(%13) : f32[2,3]
# CHECK-NEXT: return %14
