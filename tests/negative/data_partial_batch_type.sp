def main() {
    let x = zeros(shape=(10, 2))
    var last = zeros(shape=(4, 2))
    # expected-error@+1: variable 'last' changes type in the loop: f32[4,2] before, f32[2,2] after an iteration
    for xb in batches(x, batch=4) {
        last = xb
    }
    print(last)
}
