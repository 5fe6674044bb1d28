def main() {
    let x = 2.0
    # expected-error@+1: comparisons do not chain: this '>' compares the bool result of '>' with what follows
    print(3.0 > x > 1.0)
    print((3.0 > x) == (x > 1.0))
}
