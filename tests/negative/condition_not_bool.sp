def main() {
    let x = [1.0, 2.0]
    # expected-error@+1: an if condition must be a bool scalar, not bool[2]
    if x > 1.0 {
        print(x)
    }
}
