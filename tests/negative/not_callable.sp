def main() {
    let x = 3
    # expected-error@+1: the integer 3 is not callable
    print(x(1))
}
