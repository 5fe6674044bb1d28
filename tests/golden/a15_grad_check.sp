# spora grad-check: every derivative main takes, against finite differences in f64
# RUN: grad-check
def f(x, w) {
    var h = x
    for i in range(3) {
        h = tanh(h @ w)
    }
    return sum(h * h)
}

def main() {
    let x = normal(shape=(2, 3), seed=1)
    let w = normal(shape=(3, 3), seed=2) * 0.5
    print(grad(f, wrt=(0, 1))(x, w))
}
# CHECK: f: finite differences along a random direction
# CHECK: f: forward mode vs reverse mode
# CHECK: all derivatives agree
