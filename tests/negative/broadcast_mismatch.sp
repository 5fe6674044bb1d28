def main() {
    let a = ones(shape=(2, 3))
    let b = ones(shape=(4,))
    # expected-error@+1: cannot broadcast f32[2,3] and f32[4]
    print(a + b)
}
