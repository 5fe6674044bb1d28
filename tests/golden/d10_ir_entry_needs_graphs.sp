# `spora ir --entry` at the parsed stage, which has no graphs yet: an error, not the AST.
# (The partitioned stage, which prints per-device programs, says the same.)
# RUN: ir --stage parsed --entry step
def step(x) = x * 2.0

def main() {
    print(step(1.0))
}
# EXIT: 2
# CHECK-ERR: spora: error: --entry needs a graph stage (typed, grad, optimized or fused)
