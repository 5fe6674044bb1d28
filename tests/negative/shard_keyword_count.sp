# shard= on a primitive call: one layout per tensor input
def main() {
    let a = ones(shape=(8, 4))
    let b = ones(shape=(4, 2))
    # expected-error@+1: shard= gives 1 layout but matmul has 2 tensor inputs
    print(matmul(a, b, shard=((2, 1),)))
}
