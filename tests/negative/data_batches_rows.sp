def main() {
    let x = zeros(shape=(10, 2))
    let y = zeros(shape=(9,), dtype=i32)
    # expected-error@+1: batches: x has 10 rows but y has 9 (f32[10,2] and i32[9])
    for (xb, yb) in batches(x, y, batch=4) {
        print(yb)
    }
}
