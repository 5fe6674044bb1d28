# A submission with a syntax error: the expression stops after a '+'.
def logcosh_bwd(x, out, dout) = dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) = abs(x) + log1p(exp(-2.0 * abs(x))) +

def helper(x) = x
