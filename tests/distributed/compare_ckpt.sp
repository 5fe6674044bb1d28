# Prints the largest absolute difference between the parameters of two checkpoints of
# mlp_f64.sp's model (a.ckpt and b.ckpt in the working directory).
model MLP(hidden: int = 32) {
    param w1: f64[784, hidden] = normal(0.0, 0.05)
    param b1: f64[hidden] = zeros()
    param w2: f64[hidden, 10] = normal(0.0, 0.05)
    param b2: f64[10] = zeros()
}

def main() {
    let a = load("a.ckpt", MLP(hidden=32, seed=0))
    let b = load("b.ckpt", MLP(hidden=32, seed=0))
    let d = max([max(abs(a.w1 - b.w1)), max(abs(a.b1 - b.b1)), max(abs(a.w2 - b.w2)), max(abs(a.b2 - b.b2))])
    print("maxdiff", d)
}
