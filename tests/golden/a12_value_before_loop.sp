# a value defined before a dynamic loop and used after it gets its full gradient
def f(x) {
    let a = x * 3.0
    var s = x
    while sum(s) < 10.0 {
        s = s + a
    }
    return sum(a * s)
}

def main() {
    print(f([1.5]), grad(f)([1.5]))
}
# CHECK: 47.25 [63.0]
