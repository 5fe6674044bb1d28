def main() {
    let a = ones(shape=(2, 3))
    # expected-error@+1: cannot reshape f32[2,3] (6 elements) to [4,2] (8 elements)
    print(reshape(a, (4, 2)))
}
