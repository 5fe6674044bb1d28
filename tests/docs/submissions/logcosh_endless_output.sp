# A submission that prints without end, a kilobyte a line (the output limit comes long before
# the time limit, even in the sanitizer build).
def logcosh_bwd(x, out, dout) = dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) {
    var s = abs(x)
    while max(s) >= 0.0 {
        print(s, "endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless endless")
        s = s + 1.0
    }
    return abs(x) + log1p(exp(-2.0 * abs(x))) - 0.6931471805599453 + minimum(s, 0.0)
}
