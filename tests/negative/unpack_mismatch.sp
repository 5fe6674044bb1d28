def main() {
    # expected-error@+1: cannot unpack a tuple of 3 elements into 2 names
    let (a, b) = (1, 2, 3)
    print(a)
}
