# The textbook formula with the right derivative: exp(1000) overflows, so the value is inf.
def logcosh_bwd(x, out, dout) = dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) = log((exp(x) + exp(-x)) / 2.0)
