# The right forward pass through a custom_grad whose weight gradient is twice the true one.
def lin_bwd(x, w, out, dout) = (dout @ w.T, 2.0 * (x.T @ dout))

@custom_grad(lin_bwd)
def lin(x, w) = x @ w

model Dense(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = normal(0.0, 0.1)
    param b: f32[n_out] = zeros()
    def forward(x) = lin(x, w) + b
}

def momentum_step(params, grads, velocity, lr, mu) {
    let v = tree_map(fn (v0, g) => mu * v0 + g, velocity, grads)
    let p = tree_map(fn (p0, v1) => p0 - lr * v1, params, v)
    return (p, v)
}
