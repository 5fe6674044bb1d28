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
