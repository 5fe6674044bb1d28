# parallel annotations (semi-auto): shard(x, ...), shard= and @stage(k) are identities in the IR
# RUN: ir --stage typed
model Lin(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = ones()
    def forward(x) = x @ w
}

model Net() {
    param l1 = Lin(4, 8)
    @stage(1) param l2 = Lin(8, 2)
    def forward(x) = l2(relu(matmul(shard(x, "[dp, -]"), l1.w, shard=(none, (1, 2)))))
}

def main() {
    let net = Net()
    print(net(ones(shape=(3, 4))))
}
# CHECK: graph @Net.forward(%self: Net{l1: Lin{w: f32[4,8]}, l2: Lin{w: f32[8,2]}}, %x: f32[3,4]) -> f32[3,2] {
# CHECK: %13 = shard_hint(%x, layout="[dp, -]") : f32[3,4]
# CHECK-NEXT: %14 = shard_hint(%10, layout="(1, 2)") : f32[4,8]
# CHECK-NEXT: %15 = matmul(%13, %14) : f32[3,8]
# CHECK-NEXT: %16 = relu(%15) : f32[3,8]
# CHECK-NEXT: %17 = stage_boundary(%16, stage=1) : f32[3,8]
