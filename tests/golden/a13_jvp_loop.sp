# forward mode through loops and branches
def f(x) {
    var y = x
    for i in range(4) {
        y = sin(y) if sum(y) > 100.0 else y * 2.0
    }
    return y
}

def main() {
    let (y, t) = jvp(f, ([1.0, 2.0],), ([1.0, 0.5],))
    print(y, t)
}
# CHECK: [16.0, 32.0] [16.0, 8.0]
