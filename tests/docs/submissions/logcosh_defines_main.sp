# A correct logcosh with a main() of its own, which the grader refuses (it supplies main).
def logcosh_bwd(x, out, dout) = dout * tanh(x)

@custom_grad(logcosh_bwd)
def logcosh(x) = abs(x) + log1p(exp(-2.0 * abs(x))) - 0.6931471805599453

def main() {
    print(logcosh([1.0]))
}
