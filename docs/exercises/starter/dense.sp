# Exercise dense (docs/exercises/dense.md): a Dense layer and one step of SGD with momentum.
# Grade it from the repository's root:
#     python3 docs/exercises/grade.py dense docs/exercises/starter/dense.sp
# Do not write a main(): the grader adds one. Keep the parameter declarations as they are.

model Dense(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = normal(0.0, 0.1)
    param b: f32[n_out] = zeros()
    # TODO: the layer's output for a batch x of shape [B, n_in]: shape [B, n_out].
    def forward(x) = x @ w
}

# One step of SGD with momentum, PyTorch's convention, for every parameter p of `params` with
# its gradient g (in `grads`) and velocity v (in `velocity`, the same structure):
#     v = mu * v + g
#     p = p - lr * v
# Returns (new params, new velocity). tree_map(f, a, b) applies f to matching leaves.
# TODO
def momentum_step(params, grads, velocity, lr, mu) = (params, velocity)
