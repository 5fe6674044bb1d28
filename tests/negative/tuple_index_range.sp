def main() {
    let t = (1, 2)
    # expected-error@+1: tuple index 2 is out of range for a tuple of 2 elements
    print(t[2])
}
