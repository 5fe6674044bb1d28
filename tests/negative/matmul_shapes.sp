def main() {
    let x = ones(shape=(64, 784))
    let w = ones(shape=(512, 10))
    # expected-error@+1: matmul shapes do not match: f32[64,784] @ f32[512,10]
    print(x @ w)
}
