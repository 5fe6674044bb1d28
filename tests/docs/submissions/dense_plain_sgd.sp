# The step ignores the velocity: plain SGD.
model Dense(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = normal(0.0, 0.1)
    param b: f32[n_out] = zeros()
    def forward(x) = x @ w + b
}

def momentum_step(params, grads, velocity, lr, mu) {
    let p = tree_map(fn (p0, g) => p0 - lr * g, params, grads)
    return (p, velocity)
}
