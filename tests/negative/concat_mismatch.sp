def main() {
    let a = ones(shape=(2, 3))
    let b = ones(shape=(2, 4))
    # expected-error@+1: f32[2,4]
    print(concat((a, b), axis=0))
}
