# The bias is subtracted instead of added.
model Dense(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = normal(0.0, 0.1)
    param b: f32[n_out] = zeros()
    def forward(x) = x @ w - b
}

def momentum_step(params, grads, velocity, lr, mu) {
    let v = tree_map(fn (v0, g) => mu * v0 + g, velocity, grads)
    let p = tree_map(fn (p0, v1) => p0 - lr * v1, params, v)
    return (p, v)
}
