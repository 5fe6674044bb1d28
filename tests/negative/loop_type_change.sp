def main() {
    var x = [1.0]
    # expected-error@+1: variable 'x' changes type in the loop
    for i in range(3) {
        x = concat((x, x), axis=0)
    }
    print(x)
}
