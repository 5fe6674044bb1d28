def main() {
    # expected-error@+1: unknown name 'softmaxx' (did you mean 'softmax'?)
    print(softmaxx([1.0, 2.0]))
}
