# Exercise logcosh (docs/exercises/logcosh.md): log(cosh(x)) for every x, with its own
# derivative. Grade it from the repository's root:
#     python3 docs/exercises/grade.py logcosh docs/exercises/starter/logcosh.sp
# (or copy this file and grade the copy). Do not write a main(): the grader adds one.

# The backward function of @custom_grad receives the input x, the output out and the output's
# cotangent dout, and returns the input's cotangent: dout times the derivative at x.
# TODO: the derivative of log(cosh(x)).
def logcosh_bwd(x, out, dout) = dout * 0.0

# TODO: exp(x) overflows f32 beyond x = 88.7, so this is inf for large |x|. Rewrite it so that
# nothing overflows.
@custom_grad(logcosh_bwd)
def logcosh(x) = log((exp(x) + exp(-x)) / 2.0)
