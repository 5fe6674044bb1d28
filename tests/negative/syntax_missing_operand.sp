# a binary operator with nothing on its left
def main() {
    # expected-error@+1: expected an expression but found '*'
    let x = * 2.0
    print(x)
}
