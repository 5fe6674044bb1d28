# shard(x, partition numbers): one number per dimension of x
def main() {
    let x = ones(shape=(8, 4))
    # expected-error@+1: shard: layout (2, 1, 1) has 3 entries but the tensor f32[8,4] has rank 2
    print(shard(x, (2, 1, 1)))
}
