def main() {
    let x = 1
    # expected-error@+1: cannot assign to 'x': it was declared with let
    x = 2
    print(x)
}
