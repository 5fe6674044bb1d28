# A submission with a type error: the backward function multiplies by a tensor of the wrong
# shape.
def logcosh_bwd(x, out, dout) = dout * tanh(x) * [1.0, 2.0]

@custom_grad(logcosh_bwd)
def logcosh(x) = abs(x) + log1p(exp(-2.0 * abs(x))) - 0.6931471805599453
