def main() {
    # expected-error@+1: sum has no parameter named 'axes'
    print(sum([1.0, 2.0], axes=0))
}
