# A stable value, but the backward function returns twice the derivative.
def logcosh_bwd(x, out, dout) = 2.0 * dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) = abs(x) + log1p(exp(-2.0 * abs(x))) - 0.6931471805599453
