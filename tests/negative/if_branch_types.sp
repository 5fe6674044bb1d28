def f(x: f32[2]) {
    var y = x
    # expected-error@+1: variable 'y' has different types after the branches of this if
    if sum(x) > 0.0 {
        y = sum(x)
    }
    return y
}

def main() {
    print(f([1.0, 2.0]))
}
