# gradients through a for loop (taped iterations)
def f(x) {
    var y = x
    for i in range(3) {
        y = y * x
    }
    return sum(y)
}

def main() {
    print(grad(f)([1.0, 2.0]))
}
# CHECK: [4.0, 32.0]
