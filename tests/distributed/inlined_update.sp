# A training loop whose update is written inline (tree_map in main): the lowering alone would
# keep the parameter as a bare tensor; a distributed run gives the model a record
# (LowerOptions::materialize_models), which ZeRO shards (distributed_zero1_inlined_update_2).
model Lin {
    param w: f64[8, 4] = normal(0.0, 0.05)
    def forward(x) = x @ w
}
def loss(net: Lin, x) = sum(net(x))
def main() {
    var net = Lin(seed=0)
    for i in range(3) {
        let (l, g) = value_and_grad(loss)(net, ones(shape=[2, 8], dtype=f64))
        net = tree_map(fn (p, d) => p - 0.1 * d, net, g)
        print(l)
    }
}
