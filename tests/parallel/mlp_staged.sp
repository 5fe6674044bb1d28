# tests/parallel/mlp_small.sp with `@stage(1)` on l3: the language's stage marks (stage_boundary,
# ops/annotation.cpp) decide the pipeline split of a strategy that gives no "split"
# (tests/parallel/pipeline_markers.json): stage 0 holds l1 and l2, stage 1 holds l3 (the
# "auto" cut would put l2 on stage 1).
let batch = 8

model Lin(n_in: int, n_out: int) {
    param w: f64[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f64[n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) = x @ w + b
}

model MLP() {
    param l1 = Lin(16, 32)
    param l2 = Lin(32, 32)
    @stage(1) param l3 = Lin(32, 8)
    def forward(x) = l3(relu(l2(relu(l1(x)))))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(seed=0)
    let x = normal(shape=(batch, 16), seed=1, dtype=f64)
    let y = cast(uniform(0.0, 8.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
