def main() {
    # expected-error@+1: fashion_mnist: split must be "train" or "test", not "val"
    for (x, y) in fashion_mnist("val", batch=8) {
        print(y)
    }
}
