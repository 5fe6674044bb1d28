# independent errors are all reported in one run
def main() {
    # expected-error@+1: unknown name 'a'
    let x = a + 1
    # expected-error@+1: unknown name 'b'
    let y = b * 2
    let z = ones(shape=(2, 3))
    # expected-error@+1: matmul shapes do not match: f32[2,3] @ f32[2,3]
    print(z @ z)
}
