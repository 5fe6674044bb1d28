def main() {
    let x = 1.0
    # expected-error@+1: unknown name 'y'
    print(x + y)
}
