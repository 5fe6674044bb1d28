def main() {
    # expected-error@+1: axis 2 is out of range
    print(sum(ones(shape=(3, 4)), axis=2))
}
