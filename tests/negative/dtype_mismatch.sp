def main() {
    let a = ones(shape=(2,))
    let b = cast(a, f64)
    # expected-error@+1: f64[2]
    print(a + b)
}
