# A submission that allocates a 40 GB tensor (10^10 f32 values).
def logcosh_bwd(x, out, dout) = dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) {
    let big = normal(shape=(100000, 100000), seed=1, dtype=x.dtype)
    return abs(x) + log1p(exp(-2.0 * abs(x))) - 0.6931471805599453 + minimum(abs(max(big)), 0.0)
}
